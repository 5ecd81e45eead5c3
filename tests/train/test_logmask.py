"""train.log masking: a traceback's paths survive (they are what a failed run's log is read for), while personal
data and secrets on the same line, including inside a path, are masked."""

from gate.train.logmask import mask_log_line


def test_paths_survive_whole():
    line = ('  File "/tmp/pytest-of-root/pytest-3/test_swift0/run/swift/v0-20261201-193012/checkpoint-3/args.json", '
            'line 11, in <module>')
    assert mask_log_line(line) == line
    tmp = "running /tmp/tmpab12cd34ef56gh78ij90kl.11/script.py and ./out/v1-20261201/logging.jsonl"
    assert mask_log_line(tmp) == tmp  # the old masker gave /tmp***.11/s***.py


def test_secrets_and_personal_data_are_still_masked():
    line = ("row 4: user john.doe@example.com phone +1 415 555 0199 key sk-proj-abcdefghijklmnopqrstuvwx1234567890ABCD"
            " in /home/ann.lee@corp.example/x.py token=hf_abcdefghijklmnopqrstuvwxyzABCDEFGH1234")
    out = mask_log_line(line)
    for raw in ("john.doe@example.com", "415 555 0199", "sk-proj-abcdefghijklmnop", "ann.lee@corp.example",
                "hf_abcdefghijklmnopqrstuvwxyz"):
        assert raw not in out, out
    assert "/x.py" in out and out.startswith("row 4: user j***@")
