set terminal pngcairo size 640,480 noenhanced
set output 'freq_blocks_0_mixer.png'
set title 'listops/s4d/scratch: blocks.0.mixer frequency response |DFT(K)|'
set xlabel 'frequency (cycles per step)'
set ylabel 'gain |K(f)|'
set logscale y
set grid
plot 'freq_blocks_0_mixer.dat' index 0 using 1:2 with lines title 'channel 43, dt 0.0011', 'freq_blocks_0_mixer.dat' index 1 using 1:2 with lines title 'channel 48, dt 0.0046', 'freq_blocks_0_mixer.dat' index 2 using 1:2 with lines title 'channel 33, dt 0.032', 'freq_blocks_0_mixer.dat' index 3 using 1:2 with lines title 'channel 12, dt 0.094'
