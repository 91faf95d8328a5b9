set terminal pngcairo size 640,480 noenhanced
set output 'conv_decoder_1_mixer_conv_head0.png'
set title 'sentiment/dynamicconv/scratch: decoder.1.mixer.conv (dynamic), head 0'
set xlabel 'tap offset (positions; negative = the past)'
set ylabel 'position t (its own kernel)'
set yrange [8.5:-0.5]
set xrange [-0.5:6.5]
set cbrange [0:*]
set xtics ('-6' 0, '-5' 1, '-4' 2, '-3' 3, '-2' 4, '-1' 5, '0' 6)
set cblabel 'kernel weight (each row sums to 1)'
set palette grey negative
plot 'conv_decoder_1_mixer_conv_head0.dat' matrix with image notitle
