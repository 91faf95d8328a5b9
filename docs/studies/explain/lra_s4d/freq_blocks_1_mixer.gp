set terminal pngcairo size 640,480 noenhanced
set output 'freq_blocks_1_mixer.png'
set title 'listops/s4d/scratch: blocks.1.mixer frequency response |DFT(K)|'
set xlabel 'frequency (cycles per step)'
set ylabel 'gain |K(f)|'
set logscale y
set grid
plot 'freq_blocks_1_mixer.dat' index 0 using 1:2 with lines title 'channel 26, dt 0.001', 'freq_blocks_1_mixer.dat' index 1 using 1:2 with lines title 'channel 9, dt 0.0046', 'freq_blocks_1_mixer.dat' index 2 using 1:2 with lines title 'channel 24, dt 0.029', 'freq_blocks_1_mixer.dat' index 3 using 1:2 with lines title 'channel 36, dt 0.09'
