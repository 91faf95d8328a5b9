set terminal pngcairo size 640,480 noenhanced
set output 'attn_transformer_h_0_attn_head1.png'
set title 'bit_xor/fpt: transformer.h.0.attn, head 1'
set xlabel 'key position (read from)'
set ylabel 'query position (reading)'
set yrange [9.5:-0.5]
set xrange [-0.5:9.5]
set cbrange [0:*]
set cblabel 'attention weight (each row sums to 1)'
set palette grey negative
set xtics ('0' 0, '1' 1, '1' 2, '1' 3, '0' 4, '0' 5, '0' 6, '1' 7, '1' 8, '0' 9) rotate by 90 font ',8'
set ytics ('0' 0, '1' 1, '1' 2, '1' 3, '0' 4, '0' 5, '0' 6, '1' 7, '1' 8, '0' 9) font ',8'
plot 'attn_transformer_h_0_attn_head1.dat' matrix with image notitle
