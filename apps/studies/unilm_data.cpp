// apps/studies/unilm_data.cpp - the pairs of `studies unilm` and the batches the model reads (see unilm.h): Brown
// sentences cut into A (their first words) and B = paraphrase_like(A), split by document; then "[CLS] A [SEP] B [SEP]"
// rows with their segment ids, key mask, prefix length (the UniLM mask) and next-byte targets on B, and "[CLS] x [SEP]"
// rows for a text encoded alone. Shape letters: N rows in a batch, T ids per row.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <numeric>
#include <set>
#include <sstream>
#include <stdexcept>

#include "tasks/brown.h"
#include "tasks/text.h"
#include "unilm.h"

namespace studies {

using namespace dl;

// ---- the pairs ---------------------------------------------------------------------------------------------------

std::string paraphrase_like(const std::string& a, bool respell) {
  std::vector<std::string> words;
  std::string w;
  auto flush = [&] {
    if (!w.empty() && w != "the" && w != "a" && w != "an") words.push_back(w);
    w.clear();
  };
  for (unsigned char c : a) {
    if (c == ' ' || c == '\n' || c == '\t') flush();
    else if (std::isalnum(c) || c == '\'') w += (char)std::tolower(c);
    // any other byte (punctuation) is dropped; it does not split a word ("well-known" -> "wellknown")
  }
  flush();
  std::string b;
  for (auto& x : words) b += (b.empty() ? "" : " ") + x;
  if (respell)
    for (char& ch : b)
      if (ch >= 'a' && ch <= 'z') ch = (char)('a' + (ch - 'a' + 13) % 26);
  return b;
}

UnilmData make_unilm_pairs(const UnilmDataConfig& c) {
  if (c.max_a < 8) throw std::invalid_argument("unilm: max_a must be at least 8 bytes, found " + std::to_string(c.max_a));
  if (!(c.val > 0 && c.test > 0 && c.val + c.test < 1))
    throw std::invalid_argument("unilm: the val and test fractions must be > 0 with val + test < 1");
  std::vector<tasks::BrownDocument> docs = tasks::load_brown(c.data_dir);
  std::vector<size_t> order(docs.size());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(c.seed * 7349 + 1);
  std::shuffle(order.begin(), order.end(), rng);
  const size_t n_val = std::max<size_t>(1, (size_t)std::lround(c.val * docs.size())),
               n_test = std::max<size_t>(1, (size_t)std::lround(c.test * docs.size()));
  UnilmData d;
  std::set<std::string> train_a;  // an A that also occurs in training is dropped from val/test
  for (int pass = 0; pass < 2; pass++)  // training documents first, so the overlap check sees all of them
    for (size_t r = 0; r < order.size(); r++) {
      const bool is_train = r >= n_val + n_test;
      if (is_train != (pass == 0)) continue;
      const tasks::BrownDocument& doc = docs[order[r]];
      std::vector<UnilmPair>& out = is_train ? d.train : r < n_val ? d.val : d.test;
      // sentences: cut each paragraph after ". ", "? ", "! "
      std::vector<std::string> sentences;
      std::string cur;
      for (size_t i = 0; i < doc.text.size(); i++) {
        const char ch = doc.text[i];
        if (ch == '\n') {
          sentences.push_back(cur), cur.clear();
          continue;
        }
        cur += ch;
        if ((ch == '.' || ch == '?' || ch == '!') && i + 1 < doc.text.size() && doc.text[i + 1] == ' ')
          sentences.push_back(cur), cur.clear(), i++;
      }
      sentences.push_back(cur);
      for (const std::string& s : sentences) {
        std::istringstream ws(s);
        std::string a, w;
        int words = 0;
        while (ws >> w && a.size() + (a.empty() ? 0 : 1) + w.size() <= (size_t)c.max_a) a += (a.empty() ? "" : " ") + w, words++;
        if (words < 3) continue;
        std::string b = paraphrase_like(a, c.respell);
        if (b.size() < 3) continue;
        if (is_train) train_a.insert(a);
        else if (train_a.count(a)) continue;
        out.push_back({a, b, doc.file_id});
      }
    }
  if (d.train.empty() || d.val.empty() || d.test.empty())
    throw std::runtime_error("unilm: a split has no pairs (train " + std::to_string(d.train.size()) + ", val " +
                             std::to_string(d.val.size()) + ", test " + std::to_string(d.test.size()) + ")");
  // fixed evaluation order, independent of the document order
  for (auto* v : {&d.val, &d.test}) std::shuffle(v->begin(), v->end(), rng);
  return d;
}

// ---- batches -------------------------------------------------------------------------------------------------------

UnilmBatch empty_batch(int64_t N, int64_t T) {
  UnilmBatch b;
  b.tok = zeros({N, T}, DType::i64), b.seg = zeros({N, T}, DType::i64), b.key_mask = zeros({N, T});
  b.prefix = zeros({N}, DType::i64), b.target = Tensor::empty({N, T}, DType::i64);
  std::fill(b.target.data<int64_t>(), b.target.data<int64_t>() + N * T, -100);
  return b;
}

UnilmBatch pair_batch(const std::vector<const UnilmPair*>& pairs, UnilmMask mask) {
  const int64_t N = (int64_t)pairs.size();
  int64_t T = 0;
  for (auto* p : pairs) T = std::max<int64_t>(T, (int64_t)(p->a.size() + p->b.size() + 3));
  UnilmBatch b = empty_batch(N, T);
  int64_t *tok = b.tok.data<int64_t>(), *seg = b.seg.data<int64_t>(), *tgt = b.target.data<int64_t>();
  float* km = b.key_mask.data<float>();
  for (int64_t i = 0; i < N; i++) {
    const UnilmPair& p = *pairs[i];
    std::vector<int64_t> row = {unilm_ids::cls};
    for (char ch : p.a) row.push_back(unilm_ids::byte_id(ch));
    row.push_back(unilm_ids::sep);
    const int64_t P = (int64_t)row.size();  // "[CLS] A [SEP]"
    for (char ch : p.b) row.push_back(unilm_ids::byte_id(ch));
    row.push_back(unilm_ids::sep);
    for (int64_t t = 0; t < (int64_t)row.size(); t++) {
      tok[i * T + t] = row[t], km[i * T + t] = 1.f, seg[i * T + t] = t >= P;
      if (t >= P - 1 && t + 1 < (int64_t)row.size()) tgt[i * T + t] = row[t + 1];  // predict B and the final [SEP]
    }
    b.prefix.data<int64_t>()[i] = mask == UnilmMask::prefix ? P : mask == UnilmMask::causal ? 0 : T;
    b.prefix_len.push_back(P);
  }
  return b;
}

UnilmBatch single_batch(const std::vector<const std::string*>& texts) {
  const int64_t N = (int64_t)texts.size();
  int64_t T = 0;
  for (auto* s : texts) T = std::max<int64_t>(T, (int64_t)s->size() + 2);
  UnilmBatch b = empty_batch(N, T);
  for (int64_t i = 0; i < N; i++) {
    const std::string& s = *texts[i];
    b.tok.data<int64_t>()[i * T] = unilm_ids::cls;
    for (size_t t = 0; t < s.size(); t++) b.tok.data<int64_t>()[i * T + 1 + (int64_t)t] = unilm_ids::byte_id(s[t]);
    b.tok.data<int64_t>()[i * T + (int64_t)s.size() + 1] = unilm_ids::sep;
    for (int64_t t = 0; t < (int64_t)s.size() + 2; t++) b.key_mask.data<float>()[i * T + t] = 1.f;
    b.prefix.data<int64_t>()[i] = T;  // full attention
    b.prefix_len.push_back((int64_t)s.size() + 2);
  }
  return b;
}

}  // namespace studies
