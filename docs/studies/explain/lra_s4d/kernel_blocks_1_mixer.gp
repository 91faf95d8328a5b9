set terminal pngcairo size 640,480 noenhanced
set output 'kernel_blocks_1_mixer.png'
set title 'listops/s4d/scratch: blocks.1.mixer (S4D) kernel K[l]'
set xlabel 'lag l (steps back)'
set ylabel 'K[l]: weight of the input l steps ago'
set grid
plot 'kernel_blocks_1_mixer.dat' index 0 using 1:2 with lines title 'channel 26, dt 0.001', 'kernel_blocks_1_mixer.dat' index 1 using 1:2 with lines title 'channel 9, dt 0.0046', 'kernel_blocks_1_mixer.dat' index 2 using 1:2 with lines title 'channel 24, dt 0.029', 'kernel_blocks_1_mixer.dat' index 3 using 1:2 with lines title 'channel 36, dt 0.09'
