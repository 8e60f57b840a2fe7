"""Exceptions raised by libmil. The message is libmil's C diagnostic,
unchanged: it names the file and line:column or byte offset, the function,
op and input concerned, what was expected and what was found."""
from . import _capi as C

__all__ = ["MILError", "MILParseError", "MILIOError", "MILFormatError", "MILTypeError", "MILInvalidError",
           "MILUnsupportedError", "MILNotFoundError"]


class MILError(Exception):
    """Base class of every libmil error. ``status`` is the C status name
    ("parse error", "I/O error", ...); ``messages`` every diagnostic."""

    def __init__(self, message, status=None, messages=()):
        super().__init__(message)
        self.status = status
        self.messages = list(messages)


class MILParseError(MILError):
    """Malformed MIL text (MIL_ERR_PARSE)."""


class MILIOError(MILError, OSError):
    """A file could not be opened, read, written or renamed (MIL_ERR_IO)."""


class MILFormatError(MILError):
    """A malformed binary file: protobuf, weight file, .npy, package (MIL_ERR_FORMAT)."""


class MILTypeError(MILError):
    """A type mismatch or failed type inference (MIL_ERR_TYPE)."""


class MILInvalidError(MILError):
    """A structurally invalid program or a bad argument (MIL_ERR_INVALID)."""


class MILUnsupportedError(MILError):
    """Valid input that libmil does not handle (MIL_ERR_UNSUPPORTED)."""


class MILNotFoundError(MILError, KeyError):
    """A named pass, op, function or input does not exist (MIL_ERR_NOT_FOUND)."""

    def __str__(self):  # KeyError would quote the message
        return Exception.__str__(self)


# status numbers of include/mil/status.h
_BY_STATUS = {1: MILParseError, 2: MILIOError, 3: MILFormatError, 4: MILTypeError, 5: MILInvalidError,
              6: MemoryError, 7: MILUnsupportedError, 8: MILNotFoundError}


class Diag:
    """A mil_diag sink used as a context manager; raise_for() turns a
    failing status into the matching exception."""

    def __init__(self):
        self.d = C.Diag()
        C.diag_init(C.byref(self.d))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        C.diag_clear(C.byref(self.d))
        return False

    @property
    def ref(self):
        return C.byref(self.d)

    def messages(self, severity=None):
        out = []
        for i in range(self.d.count):
            m = self.d.msgs[i]
            if severity is None or m.severity == severity:
                out.append((m.text or b"").decode("utf-8", "replace"))
        return out

    def warnings(self):
        return self.messages(1)

    def raise_for(self, status, context=None):
        if status == 0:
            return
        errors = self.messages(0)
        text = "\n".join(errors) if errors else (context or "libmil call failed")
        cls = _BY_STATUS.get(status, MILError)
        name = C.status_str(status).decode()
        if cls is MemoryError:
            raise MemoryError(text)
        raise cls(text, name, self.messages())
