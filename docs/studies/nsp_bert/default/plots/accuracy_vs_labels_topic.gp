set terminal pngcairo size 800,500 noenhanced
set output '/tmp/defaults/nsp_bert2/plots/accuracy_vs_labels_topic.png'
set title 'topic: test accuracy vs labelled examples'
set xlabel 'labelled training examples'
set ylabel 'test accuracy (%)'
set key bottom right
set grid
set logscale x
plot '/tmp/defaults/nsp_bert2/plots/accuracy_vs_labels_topic.dat' index 0 using 1:2:3 with yerrorlines title 'fine-tuned, pretrained', \
     '/tmp/defaults/nsp_bert2/plots/accuracy_vs_labels_topic.dat' index 1 using 1:2:3 with yerrorlines title 'fine-tuned, from scratch', \
     '/tmp/defaults/nsp_bert2/plots/accuracy_vs_labels_topic.dat' index 2 using 1:2 with linespoints title 'zero-shot NSP (mean of templates)', \
     '/tmp/defaults/nsp_bert2/plots/accuracy_vs_labels_topic.dat' index 3 using 1:2 with linespoints title 'majority class'
