set terminal pngcairo size 800,500 noenhanced
set output 'accuracy_vs_labels_sentiment.png'
set title 'sentiment: test accuracy vs labelled examples'
set xlabel 'labelled training examples'
set ylabel 'test accuracy (%)'
set key bottom right
set grid
set logscale x
plot 'accuracy_vs_labels_sentiment.dat' index 0 using 1:2:3 with yerrorlines title 'fine-tuned, pretrained', \
     'accuracy_vs_labels_sentiment.dat' index 1 using 1:2:3 with yerrorlines title 'fine-tuned, from scratch', \
     'accuracy_vs_labels_sentiment.dat' index 2 using 1:2 with linespoints title 'zero-shot NSP (mean of templates)', \
     'accuracy_vs_labels_sentiment.dat' index 3 using 1:2 with linespoints title 'majority class'
