set terminal pngcairo size 900,820 noenhanced
set output 'attn_blocks_0_mixer_head0.png'
set title 'listops/transformer/scratch: blocks.0.mixer, head 0'
set xlabel 'key position (read from)'
set ylabel 'query position (reading)'
set yrange [51.5:-0.5]
set xrange [-0.5:51.5]
set cbrange [0:*]
set cblabel 'attention weight (each row sums to 1)'
set palette grey negative
set xtics ('[MED' 0, '[MAX' 1, '[MAX' 2, '5' 3, '[MIN' 4, '1' 5, '2' 6, '0' 7, '1' 8, '8' 9, '3' 10, '[MAX' 11, '[MIN' 12, '1' 13, '2' 14, '9' 15, '[MED' 16, '8' 17, '8' 18, ']' 19, '1' 20, '9' 21, '4' 22, '6' 23, '3' 24, '4' 25, ']' 26, '5' 27, '0' 28, '9' 29, '2' 30, '9' 31, '7' 32, ']' 33, '9' 34, ']' 35, '6' 36, '1' 37, '4' 38, '5' 39, '6' 40, ']' 41, '7' 42, '2' 43, '1' 44, '0' 45, '8' 46, ']' 47, '6' 48, '3' 49, '7' 50, ']' 51) rotate by 90 font ',8'
set ytics ('[MED' 0, '[MAX' 1, '[MAX' 2, '5' 3, '[MIN' 4, '1' 5, '2' 6, '0' 7, '1' 8, '8' 9, '3' 10, '[MAX' 11, '[MIN' 12, '1' 13, '2' 14, '9' 15, '[MED' 16, '8' 17, '8' 18, ']' 19, '1' 20, '9' 21, '4' 22, '6' 23, '3' 24, '4' 25, ']' 26, '5' 27, '0' 28, '9' 29, '2' 30, '9' 31, '7' 32, ']' 33, '9' 34, ']' 35, '6' 36, '1' 37, '4' 38, '5' 39, '6' 40, ']' 41, '7' 42, '2' 43, '1' 44, '0' 45, '8' 46, ']' 47, '6' 48, '3' 49, '7' 50, ']' 51) font ',8'
plot 'attn_blocks_0_mixer_head0.dat' matrix with image notitle
