"""Test formats of the lit suite, in a module of their own so that lit's
worker processes can unpickle them (a class defined in a lit.local.cfg
cannot be). test/lit.cfg.py puts this directory on sys.path.

Under the sanitizers (scripts/sanitize.sh sets KVCACHE_TEST_SAMPLE=N, N > 1)
the slowest tests run a sample and report the others UNSUPPORTED, with the
reason; stage 1 of scripts/test.sh runs every test."""

import os

import lit.formats
import lit.Test
import lit.util


def _unsupported(reason):
    return lit.Test.Result(lit.Test.UNSUPPORTED, reason)


class SampledShTest(lit.formats.ShTest):
    """Shell tests of which every `sample`-th file of a directory runs, by
    name, the first included."""

    def __init__(self, execute_external, sample):
        super().__init__(execute_external)
        self.sample = sample

    def execute(self, test, litConfig):
        source = test.getSourcePath()
        suffix = os.path.splitext(source)[1]
        names = sorted(name for name in os.listdir(os.path.dirname(source))
                       if name.endswith(suffix))
        if names.index(os.path.basename(source)) % self.sample:
            return _unsupported("sampled out under KVCACHE_TEST_SAMPLE={}"
                                .format(self.sample))
        return super().execute(test, litConfig)


class PytestFiles(lit.formats.ShTest):
    """One lit test per test_*.py file of a directory: pytest on that file
    (PYTHONPATH and KVCACHE_BIN from the build). The files in
    `serial_files` run a second time as `<file>/serial` with
    KVCACHE_CPU_THREADS=1 and the pytest selection `serial_selection`
    (UNSUPPORTED when `sample` > 1); naming such a file on lit's command
    line runs both. *.test files stay shell tests. A file
    passes when pytest exits with 0: every selected test passed, and at
    least one was selected."""

    def __init__(self, execute_external, serial_files, serial_selection,
                 sample):
        super().__init__(execute_external)
        self.serial_files = serial_files
        self.serial_selection = serial_selection
        self.sample = sample

    def getTestsForPath(self, testSuite, path_in_suite, litConfig,
                        localConfig):
        name = path_in_suite[-1]
        if not (name.startswith("test_") and name.endswith(".py")):
            yield from super().getTestsForPath(testSuite, path_in_suite,
                                               litConfig, localConfig)
            return
        yield lit.Test.Test(testSuite, path_in_suite, localConfig)
        if name in self.serial_files:
            yield lit.Test.Test(testSuite, path_in_suite + ("serial",),
                                localConfig,
                                file_path=testSuite.getSourcePath(path_in_suite))

    def getTestsInDirectory(self, testSuite, path_in_suite, litConfig,
                            localConfig):
        source = testSuite.getSourcePath(path_in_suite)
        for name in sorted(os.listdir(source)):
            if not os.path.isdir(os.path.join(source, name)):
                yield from self.getTestsForPath(
                    testSuite, path_in_suite + (name,), litConfig, localConfig)

    def execute(self, test, litConfig):
        source = test.getFilePath()
        if not source.endswith(".py"):
            return super().execute(test, litConfig)
        root = test.config.kvcache_obj_root
        env = dict(test.config.environment)
        env["PYTHONPATH"] = os.path.join(root, "python")
        env["KVCACHE_BIN"] = os.path.join(root, "bin")
        command = ["/usr/bin/python3", "-m", "pytest", "-q",
                   "-p", "no:cacheprovider", source]
        if test.path_in_suite[-1] == "serial":
            if self.sample > 1:
                return _unsupported("the serial runs are in the "
                                    "unsanitized stage only")
            env["KVCACHE_CPU_THREADS"] = "1"
            command += ["-k", self.serial_selection]
        try:
            out, err, status = lit.util.executeCommand(
                command, cwd=os.path.dirname(source), env=env,
                timeout=litConfig.maxIndividualTestTime)
        except lit.util.ExecuteCommandTimeoutException as e:
            return lit.Test.Result(lit.Test.TIMEOUT, e.out + e.err)
        output = "Command: {}\n{}{}".format(" ".join(command), out, err)
        return lit.Test.Result(lit.Test.PASS if status == 0 else lit.Test.FAIL,
                               output)
