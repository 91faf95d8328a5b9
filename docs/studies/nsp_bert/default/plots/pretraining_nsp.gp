set terminal pngcairo size 800,500 noenhanced
set output '/tmp/defaults/nsp_bert2/plots/pretraining_nsp.png'
set title 'Pretraining: validation NSP accuracy'
set xlabel 'step'
set ylabel 'NSP accuracy (%)'
set key bottom right
set grid
plot '/tmp/defaults/nsp_bert2/plots/pretraining_nsp.dat' index 0 using 1:2 with linespoints title 'held-out pairs'
