// tasks/gpt2_tokenizer_json.h - GPT-2's byte-level BPE (tasks/gpt2_bpe.h) read from Hugging Face's single-file
// `tokenizer.json` (what the `tokenizers` library saves) instead of vocab.json + merges.txt.
//
// The file is a JSON object; what is read, and what it must say for the encoding to be GPT-2's:
//   model.type         "BPE"
//   model.vocab        {token: id}: the vocab.json object, checked as Gpt2Bpe checks vocab.json
//   model.merges       the merges in rank order, each "A B" (tokenizers before 0.20) or ["A", "B"] (0.20 and later):
//                      the lines of merges.txt, checked as Gpt2Bpe checks them; a message's "model.merges:N" is the
//                      N-th entry, counted from 1
//   pre_tokenizer      {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true}: GPT-2's pattern and byte
//                      map with no space put before the text (add_prefix_space is required, as the tokenizers library
//                      requires it; use_regex may be missing: its default there is true)
//   normalizer         null or missing (no normalisation before the split)
//   model.continuing_subword_prefix, model.end_of_word_suffix   null, missing or "" (byte-level BPE has neither)
//   added_tokens       each {"id", "content"} must be a token of model.vocab with that id ("<|endoftext|>" = 50256 in
//                      GPT-2's file): encoding does not split special tokens out of the text (gpt2_bpe.h), so an added
//                      token is only a name for an id
// Everything else (truncation, padding, post_processor, decoder, model.dropout, ...) does not change the ids of a text
// and is not read. Every problem is a DataError naming the file and the field, with what was expected and what was
// found; a key given twice in any object is named (JSON readers keep the last silently).
// What it is not: a reader of other tokenizers.json models (WordPiece, Unigram, a BPE with a normaliser or another
// pre-tokenizer): those are refused, naming the field that differs.
#pragma once
#include <string>
#include <string_view>

#include "tasks/gpt2_bpe.h"

namespace dl::tasks {

Gpt2Bpe load_gpt2_tokenizer_json(const std::string& path);
// The same from the file's contents; `name` is used in messages.
Gpt2Bpe parse_gpt2_tokenizer_json(std::string_view text, const std::string& name = "tokenizer.json");

}  // namespace dl::tasks
