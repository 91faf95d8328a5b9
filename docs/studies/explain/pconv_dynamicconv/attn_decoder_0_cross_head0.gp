set terminal pngcairo size 900,820 noenhanced
set output 'attn_decoder_0_cross_head0.png'
set title 'sentiment/dynamicconv/scratch: decoder.0.cross, head 0'
set xlabel 'input key position (read from)'
set ylabel 'decoder query position (reading)'
set yrange [8.5:-0.5]
set xrange [-0.5:24.5]
set cbrange [0:*]
set cblabel 'attention weight (each row sums to 1)'
set palette grey negative
set xtics ('a' 0, '_' 1, 'w' 2, 'o' 3, 'n' 4, 'd' 5, 'e' 6, 'r' 7, 'f' 8, 'u' 9, 'l' 10, ',' 11, '_' 12, 'm' 13, 'o' 14, 'v' 15, 'i' 16, 'n' 17, 'g' 18, '_' 19, 'f' 20, 'i' 21, 'l' 22, 'm' 23, 'eos' 24) rotate by 90 font ',8'
set ytics ('start' 0, 'p' 1, 'o' 2, 's' 3, 'i' 4, 't' 5, 'i' 6, 'v' 7, 'e' 8) font ',8'
plot 'attn_decoder_0_cross_head0.dat' matrix with image notitle
