

Bfp16_rawz€x€€