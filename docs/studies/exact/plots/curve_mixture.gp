set terminal pngcairo size 800,500 noenhanced
set output 'docs/studies/exact/plots/curve_mixture.png'
set title 'mixture: test accuracy during training (mean ± SE over seeds)'
set xlabel 'step'
set ylabel 'test accuracy %'
set key bottom right
set grid
plot 'docs/studies/exact/plots/curve_mixture.dat' index 0 using 1:2:3 with yerrorlines title 'cross-entropy', \
     'docs/studies/exact/plots/curve_mixture.dat' index 1 using 1:2:3 with yerrorlines title 'EXACT'
