// placeholder until nn/module.cpp lands
