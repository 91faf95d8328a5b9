# learning curves of the retrieval / pathfinder diagnosis runs (docs/results/retrieval_pathfinder_2026-12-02.md)
set datafile separator ','
set terminal pngcairo size 1100,420 font ',10'
m(n) = 'metrics/'.n.'.csv'   # run from this folder: gnuplot curves.gp
set key bottom left font ',9'
set xlabel 'fine-tuning step'
set grid

set output 'retrieval.png'
set multiplot layout 1,2 title 'Retrieval (2 x 256 bytes unless named), from scratch, seed 0 (S4D unless named)'
set ylabel 'training loss (ln 2 = 0.693: chance)'
set yrange [0:0.75]
plot m('r_s4d_base') u 3:4 w lp t '3000 pairs, 600 steps (small)', \
     m('r_s4d_2400') u 3:4 w lp t '3000 pairs, 2400 steps', \
     m('r_s4d_n20k') u 3:4 w lp t '20000 pairs, 2400 steps', \
     m('r_s4d_n20k_6000') u 3:4 w lp t '20000 pairs, 6000 steps', \
     m('r_s4d_n20k_L1000') u 3:4 w lp lc 'dark-green' t '2 x 1000 bytes, 20000 pairs, 2400 steps', \
     m('r_tr_n20k') u 3:4 w lp dt 2 lc 'red' t 'Transformer: 20000 pairs, 2400 steps', 0.693 w l dt 2 lc 'black' notitle
set ylabel 'validation accuracy (128 pairs)'
set yrange [0.35:0.7]
plot m('r_s4d_base') u 3:6 w lp t '3000 pairs, 600 steps (small)', \
     m('r_s4d_2400') u 3:6 w lp t '3000 pairs, 2400 steps', \
     m('r_s4d_n20k') u 3:6 w lp t '20000 pairs, 2400 steps', \
     m('r_s4d_n20k_6000') u 3:6 w lp t '20000 pairs, 6000 steps', \
     m('r_s4d_n20k_L1000') u 3:6 w lp lc 'dark-green' t '2 x 1000 bytes, 20000 pairs, 2400 steps', \
     m('r_tr_n20k') u 3:6 w lp dt 2 lc 'red' t 'Transformer: 20000 pairs, 2400 steps', 0.5 w l dt 2 lc 'black' notitle
unset multiplot

set output 'pathfinder.png'
set multiplot layout 1,2 title 'Pathfinder 32 x 32, S4D from scratch, seed 0'
set ylabel 'training loss (ln 2 = 0.693: chance)'
set yrange [0.6:0.75]
plot m('p_s4d_base') u 3:4 w lp t 'contour 14, 3000 images, 600 steps (small)', \
     m('p_s4d_n20k') u 3:4 w lp t 'contour 14, 20000 images, 2400 steps', \
     m('p6_s4d_n20k') u 3:4 w lp t 'contour 6, 20000 images, 2400 steps', \
     m('p6_s4d_n20k_last') u 3:4 w lp t 'contour 6, 20000 images, 2400 steps, pool last', 0.693 w l dt 2 lc 'black' notitle
set ylabel 'validation accuracy (128 images)'
set yrange [0.35:0.7]
plot m('p_s4d_base') u 3:6 w lp t 'contour 14, 3000 images, 600 steps (small)', \
     m('p_s4d_n20k') u 3:6 w lp t 'contour 14, 20000 images, 2400 steps', \
     m('p6_s4d_n20k') u 3:6 w lp t 'contour 6, 20000 images, 2400 steps', \
     m('p6_s4d_n20k_last') u 3:6 w lp t 'contour 6, 20000 images, 2400 steps, pool last', 0.5 w l dt 2 lc 'black' notitle
unset multiplot
