"""Speech: the offline voices and their backends, CosyVoice over HTTP, Whisper transcription and the
WER scoring of the intelligibility filter."""
