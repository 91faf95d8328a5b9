set terminal pngcairo size 640,480 noenhanced
set output 'conv_encoder_1_mixer_conv.png'
set title 'sentiment/lightconv/scratch: encoder.1.mixer.conv (lightweight)'
set xlabel 'tap offset (positions; negative = the past)'
set ylabel 'softmax kernel weight (sums to 1 per head)'
set grid
plot 'conv_encoder_1_mixer_conv.dat' index 0 using 1:2 with linespoints title 'head 0', 'conv_encoder_1_mixer_conv.dat' index 1 using 1:2 with linespoints title 'head 1', 'conv_encoder_1_mixer_conv.dat' index 2 using 1:2 with linespoints title 'head 2', 'conv_encoder_1_mixer_conv.dat' index 3 using 1:2 with linespoints title 'head 3'
