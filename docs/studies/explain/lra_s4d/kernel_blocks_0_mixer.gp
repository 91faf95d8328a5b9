set terminal pngcairo size 640,480 noenhanced
set output 'kernel_blocks_0_mixer.png'
set title 'listops/s4d/scratch: blocks.0.mixer (S4D) kernel K[l]'
set xlabel 'lag l (steps back)'
set ylabel 'K[l]: weight of the input l steps ago'
set grid
plot 'kernel_blocks_0_mixer.dat' index 0 using 1:2 with lines title 'channel 43, dt 0.0011', 'kernel_blocks_0_mixer.dat' index 1 using 1:2 with lines title 'channel 48, dt 0.0046', 'kernel_blocks_0_mixer.dat' index 2 using 1:2 with lines title 'channel 33, dt 0.032', 'kernel_blocks_0_mixer.dat' index 3 using 1:2 with lines title 'channel 12, dt 0.094'
