package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/buffer"
	"go.uber.org/zap/zapcore"
)

// buildLogger builds the logger of cfg writing to w. With journal set
// (stderr is connected to journald), each line starts with its syslog
// priority, "<3>" to "<7>" (sd-daemon.h), which journald strips and records
// as the entry's PRIORITY, so that journalctl -p filters mcpd by level.
func buildLogger(cfg zap.Config, w zapcore.WriteSyncer, journal bool) *zap.Logger {
	return zap.New(zapcore.NewCore(newEncoder(cfg, journal), w, cfg.Level), zap.ErrorOutput(w), zap.AddCaller())
}

// newEncoder is the encoder of buildLogger's logger.
func newEncoder(cfg zap.Config, journal bool) zapcore.Encoder {
	var enc zapcore.Encoder
	if cfg.Encoding == "console" {
		enc = zapcore.NewConsoleEncoder(cfg.EncoderConfig)
	} else {
		enc = zapcore.NewJSONEncoder(cfg.EncoderConfig)
	}
	if journal {
		enc = priorityEncoder{enc}
	}
	return enc
}

// droppedNote formats the log sink's note of n dropped entries as a
// warning of the daemon's own log, in its format.
func droppedNote(cfg zap.Config, journal bool) func(n int) []byte {
	enc := newEncoder(cfg, journal)
	return func(n int) []byte {
		ent := zapcore.Entry{Level: zapcore.WarnLevel, Time: time.Now(), LoggerName: "log",
			Message: "log output too slow: entries were dropped (stderr was not being read)"}
		buf, err := enc.EncodeEntry(ent, []zapcore.Field{zap.Int("dropped", n)})
		if err != nil {
			return nil
		}
		defer buf.Free()
		return append([]byte(nil), buf.Bytes()...)
	}
}

// journalStream reports whether f is the stream systemd connected to
// journald: JOURNAL_STREAM holds "<device>:<inode>" of that stream, and it
// is f only if f's device and inode match ("a process may compare them to
// its stderr", which a redirection or a pipe through another process
// changes).
func journalStream(f *os.File) bool {
	dev, ino, ok := strings.Cut(os.Getenv("JOURNAL_STREAM"), ":")
	if !ok {
		return false
	}
	d, err1 := strconv.ParseUint(dev, 10, 64)
	i, err2 := strconv.ParseUint(ino, 10, 64)
	if err1 != nil || err2 != nil {
		return false
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return false
	}
	return uint64(st.Dev) == d && uint64(st.Ino) == i //nolint:unconvert // Dev is int32 on some systems
}

// priorityEncoder prefixes each encoded entry with its syslog priority.
type priorityEncoder struct{ zapcore.Encoder }

var priorityBuffers = buffer.NewPool()

func (e priorityEncoder) Clone() zapcore.Encoder { return priorityEncoder{e.Encoder.Clone()} }

func (e priorityEncoder) EncodeEntry(ent zapcore.Entry, fields []zapcore.Field) (*buffer.Buffer, error) {
	line, err := e.Encoder.EncodeEntry(ent, fields)
	if err != nil {
		return nil, err
	}
	b := priorityBuffers.Get()
	b.AppendString(syslogPriority(ent.Level))
	_, _ = b.Write(line.Bytes())
	line.Free()
	return b, nil
}

// syslogPriority is the sd-daemon.h prefix of a zap level: SD_ERR for
// error and worse, SD_WARNING, SD_INFO, SD_DEBUG.
func syslogPriority(l zapcore.Level) string {
	switch {
	case l >= zapcore.ErrorLevel:
		return "<3>"
	case l == zapcore.WarnLevel:
		return "<4>"
	case l == zapcore.InfoLevel:
		return "<6>"
	default:
		return "<7>"
	}
}
