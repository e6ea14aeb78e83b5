"""The learned crisis screen: a small sentence encoder with a classification head, run with ONNX Runtime."""
