"""What CosyVoice 2/3 is told: the prompt-text formats of each model version, and speaker styles as
instructions.

Kept apart from the backends (construction.speech.cosyvoice) because these tables are data about the
model, not transport: which instruction sentence a style becomes, which of them each version was trained
on (synthesize records whether a style was rendered), and the exact prefixes each version expects.
"""

from __future__ import annotations

from construction.core.errors import WorkbenchError

SUPPORTED_VERSIONS = (2, 3)

END_OF_PROMPT = "<|endofprompt|>"
V3_SYSTEM_PROMPT = "You are a helpful assistant."

# Speaker style -> instruction for inference_instruct2. Where CosyVoice 3's own training list
# (cosyvoice/utils/common.py `instruct_list`) has an instruction for the style, we use that wording.
STYLE_INSTRUCTIONS: dict[str, str] = {
    "excited": "请非常开心地说一句话。",  # "say it very happily"
    "happy": "请非常开心地说一句话。",
    "angry": "请非常生气地说一句话。",  # "say it very angrily"
    "sad": "请非常伤心地说一句话。",  # "say it very sadly"
    "loud": "Please say a sentence as loudly as possible.",
    "shouting": "Please say a sentence as loudly as possible.",
    "soft": "Please say a sentence in a very soft voice.",
    "whisper": "Please say a sentence in a very soft voice.",
    "whispering": "Please say a sentence in a very soft voice.",
    # the remaining speaker styles of our taxonomy, in plain English instructions
    "playful": "Please say a sentence in a playful, teasing voice.",
    "laughing": "Please say a sentence while laughing.",
    "commanding": "Please say a sentence in a firm, commanding voice.",
    "dramatic": "Please say a sentence in a dramatic, theatrical voice.",
    "fast": "请用尽可能快地语速说一句话。",  # "as fast as possible"
    "slow": "请用尽可能慢地语速说一句话。",  # "as slowly as possible"
}
# Styles that mean "no instruction": plain zero-shot cloning of the prompt voice.
NEUTRAL_STYLES = frozenset({"", "neutral", "normal", "calm"})

# The instructions each model version was trained on: only these are known to be rendered; the model may
# ignore any other. CosyVoice 3: cosyvoice/utils/common.py `instruct_list` (without its system prompt and
# <|endofprompt|>). CosyVoice 2: upstream publishes no list; its one documented instruct2 example
# (example.py) is a dialect.
TRAINED_INSTRUCTIONS: dict[int, frozenset[str]] = {
    3: frozenset({
        *(f"请用{dialect}表达。" for dialect in ("广东话", "东北话", "甘肃话", "贵州话", "河南话", "湖北话", "湖南话",
                                             "江西话", "闽南话", "宁夏话", "山西话", "陕西话", "山东话", "上海话",
                                             "四川话", "天津话", "云南话")),
        "Please say a sentence as loudly as possible.", "Please say a sentence in a very soft voice.",
        "请用尽可能慢地语速说一句话。", "请用尽可能快地语速说一句话。", "请非常开心地说一句话。",
        "请非常伤心地说一句话。", "请非常生气地说一句话。", "我想体验一下小猪佩奇风格，可以吗？",
        "你可以尝试用机器人的方式解答吗？"}),
    2: frozenset({"用四川话说这句话"}),
}


def check_version(version: int) -> int:
    if version not in SUPPORTED_VERSIONS:
        raise WorkbenchError(f"CosyVoice version must be one of {SUPPORTED_VERSIONS}, got {version!r}")
    return version


def zero_shot_prompt_text(transcript: str, version: int) -> str:
    """`prompt_text` for inference_zero_shot: CosyVoice 3 needs the system prompt and <|endofprompt|>."""
    if check_version(version) == 3:
        return f"{V3_SYSTEM_PROMPT}{END_OF_PROMPT}{transcript}"
    return transcript


def instruct_prompt_text(instruction: str, version: int) -> str:
    """`instruct_text` for inference_instruct2; both versions end the instruction with <|endofprompt|>."""
    instruction = instruction.strip()
    if check_version(version) == 3:
        return f"{V3_SYSTEM_PROMPT} {instruction}{END_OF_PROMPT}"
    return f"{instruction}{END_OF_PROMPT}"
