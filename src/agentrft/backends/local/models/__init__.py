"""Models the local engine loads: a Hugging Face directory or hub name, a GGUF file or an
installed model package, and the tiny random-init model tests and demos build offline.

Owns: finding and loading a model and its tokenizer. Imports nothing else of the local
backend; everything above it (inference, algo, run) may import it.
"""
