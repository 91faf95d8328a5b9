set terminal pngcairo size 640,480 noenhanced
set output 'conv_encoder_1_mixer_conv_head1.png'
set title 'sentiment/dynamicconv/scratch: encoder.1.mixer.conv (dynamic), head 1'
set xlabel 'tap offset (positions; negative = the past)'
set ylabel 'position t (its own kernel)'
set yrange [24.5:-0.5]
set xrange [-0.5:6.5]
set cbrange [0:*]
set xtics ('-3' 0, '-2' 1, '-1' 2, '0' 3, '1' 4, '2' 5, '3' 6)
set cblabel 'kernel weight (each row sums to 1)'
set palette grey negative
plot 'conv_encoder_1_mixer_conv_head1.dat' matrix with image notitle
