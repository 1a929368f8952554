"""The parts of Kimi-Audio-Evalkit's `almeval` package that load a dataset class and score it, reproduced
from MoonshotAI/Kimi-Audio-Evalkit at f9c4777 (its package cannot be installed here: it pins CUDA models):
almeval/datasets/base.py (AudioBaseDataset: the five asserted attributes, the dataset file search under
dataset_root, load_data, build_prompt's audio-file assert and message, format_performance, get_model_name),
almeval/datasets/__init__.py (classes collected per module with get_subclasses, EXCLUDE honoured, build_dataset
by DATASET_NAME), almeval/datasets/ds_openqa.py (AudioOpenQADataset's class attributes only) and run_audio.py's
result file (the dataset's items with `prediction` and `real_prompt`, one JSON per line). Kept line for line
where it decides something; jsonlines, pandas, loguru and torch's Dataset are replaced by the standard library.
`write(root)` lays the package out under root; ConfigManager reads dataset_root from KIMI_DATASET_ROOT."""

from __future__ import annotations

from pathlib import Path

BASE = '''import datetime
import json
import os

from ..utils.config_manager import ConfigManager


class AudioBaseDataset:
    ALLOWED_INTERACTIVE = ['Audio-QA', 'Audio-analysis']
    ALLOWED_TASKS = ['ASR', 'Open-Ended', 'MQA', 'Ref-QA']
    ALLOWED_AUDIO_TYPES = ['Speech', 'Music', 'AudioEvent', 'Any']

    INTERACTIVE = None
    TASK = None
    AUDIO_TYPE = None
    DATASET_SERIES = None
    DATASET_NAME = None

    EXCLUDE = False

    def __init__(self):
        assert self.INTERACTIVE in self.ALLOWED_INTERACTIVE
        assert self.TASK in self.ALLOWED_TASKS
        assert self.AUDIO_TYPE in self.ALLOWED_AUDIO_TYPES
        assert self.DATASET_SERIES is not None
        assert self.DATASET_NAME is not None

        self.config_manager = ConfigManager()
        self.dataset_root = self.config_manager.get_dataset_root()
        self.dataset_file = self.config_manager.get_dataset_path(self.DATASET_NAME)

        self.ok = False
        if self.dataset_file is None:
            if self.dataset_root is None:
                self.ok = False
                return None
            else:
                possible_locations = [
                    os.path.join(self.dataset_root, self.DATASET_NAME, f'{self.DATASET_NAME}.jsonl'),
                    os.path.join(self.dataset_root, self.DATASET_SERIES, f'{self.DATASET_NAME}.jsonl'),
                    os.path.join(self.dataset_root, self.DATASET_SERIES, self.DATASET_NAME,
                                 f'{self.DATASET_NAME}.jsonl'),
                ]
                for location in possible_locations:
                    if os.path.exists(location):
                        self.dataset_file = location
                        break
                else:
                    self.ok = False
                    return None
        else:
            if not os.path.exists(self.dataset_file):
                self.ok = False
                return None

        self.data = self.load_data(self.dataset_file)
        self.demo = False
        assert isinstance(self.data, list)
        self.meta = {
            'task': self.TASK,
            'interactive': self.INTERACTIVE,
            'audio_type': self.AUDIO_TYPE,
            'dataset_series': self.DATASET_SERIES,
            'dataset_name': self.DATASET_NAME,
        }
        self.post_build()
        self.ok = True

    def __len__(self):
        return len(self.data)

    def __getitem__(self, idx):
        return self.build_prompt(idx)

    def load_data(self, dataset):
        with open(dataset) as reader:
            return [json.loads(line) for line in reader]

    def post_build(self):
        return None

    def build_prompt(self, idx):
        if isinstance(idx, str) and idx.isdigit():
            item = self.data[int(idx)]
        if isinstance(idx, int):
            item = self.data[idx]
        if 'audio_path' in item:
            audio_path = item['audio_path']
        if isinstance(audio_path, list):
            for i, p in enumerate(audio_path):
                assert os.path.exists(p), f'Audio file not found: {p}'
        else:
            assert os.path.exists(audio_path), f'Audio file not found: {audio_path}'
        question = item['question']
        msg = {'index': item['index'], 'audio': [], 'text': question, 'meta': self.meta}
        if isinstance(audio_path, list):
            msg['audio'].extend(audio_path)
        elif isinstance(audio_path, str):
            msg['audio'].append(audio_path)
        if 'subset' in item:
            msg['meta']['subset'] = item['subset']
        if 'meta' in item:
            msg['meta'].update(item['meta'])
        return msg

    def evaluate(self, eval_file, dump_judge=False, method='default'):
        raise NotImplementedError

    def format_performance(self, model_name, performance, eval_method='null'):
        return {
            'task': self.TASK,
            'dataset': self.DATASET_NAME,
            'model': model_name,
            'date': str(datetime.datetime.now()),
            'performance': performance,
            'eval_method': eval_method,
        }

    def get_model_name(self, eval_file):
        return os.path.basename(eval_file).split(self.DATASET_NAME)[0][:-1]
'''

OPENQA = '''from .base import AudioBaseDataset


class AudioOpenQADataset(AudioBaseDataset):
    INTERACTIVE = 'Audio-QA'
    TASK = 'Open-Ended'
'''

INIT = '''import inspect

from . import ds_openqa
from .base import AudioBaseDataset
from .ds_openqa import AudioOpenQADataset

EXCLUDED_CLASSES = ['AudioBaseDataset', 'ASRDataset', 'AudioMQADataset', 'AudioOpenQADataset', 'AudioRefQADataset']


def get_subclasses(base_class, module):
    return [
        cls for name, cls in inspect.getmembers(module, inspect.isclass)
        if issubclass(cls, base_class) and cls.__name__ not in EXCLUDED_CLASSES and cls.EXCLUDE is False
    ]


OPEN_QA = get_subclasses(AudioOpenQADataset, ds_openqa)
ALL_DATSETS = OPEN_QA
ALL_DATASETS = {ds.DATASET_NAME: ds for ds in ALL_DATSETS}


def build_dataset(name=None):
    if name not in ALL_DATASETS:
        raise ValueError(f"Dataset {name} not found, all supported datasets: {ALL_DATASETS.keys()}")
    dataset = ALL_DATASETS[name]()
    if dataset.ok:
        return dataset
    raise ValueError(f'Dataset {name} build failed')
'''

CONFIG = '''import os


class ConfigManager:
    def get_dataset_root(self):
        return os.environ.get("KIMI_DATASET_ROOT")

    def get_dataset_path(self, name):
        return None
'''


def write(root: Path, class_file: Path) -> None:
    """almeval under root, with the exported class file installed as its README says: copied into
    almeval/datasets/ and imported at the end of ds_openqa.py."""
    files = {"almeval/__init__.py": "", "almeval/utils/__init__.py": "", "almeval/utils/config_manager.py": CONFIG,
             "almeval/datasets/__init__.py": INIT, "almeval/datasets/base.py": BASE,
             "almeval/datasets/ds_openqa.py": OPENQA + "\nfrom .ds_aor_bench import *  # noqa\n",
             "almeval/datasets/ds_aor_bench.py": class_file.read_text()}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
