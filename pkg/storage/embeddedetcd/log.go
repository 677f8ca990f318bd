package embeddedetcd

import (
	"errors"
	"net"
	"net/http"
	"slices"
	"sort"

	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"
)

// klogCore sends etcd's zap log entries at or above a level to the
// process's klog logger, so that an embedded etcd's warnings and errors
// land in the process log instead of being dropped.
type klogCore struct {
	zapcore.LevelEnabler
	logger klog.Logger
	fields []zapcore.Field
}

func newKlogCore(logger klog.Logger, level zapcore.Level) zapcore.Core {
	return klogCore{LevelEnabler: level, logger: logger}
}

func (c klogCore) With(fields []zapcore.Field) zapcore.Core {
	c.fields = append(slices.Clip(c.fields), fields...)
	return c
}

func (c klogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c klogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range append(slices.Clip(c.fields), fields...) {
		if err, ok := f.Interface.(error); ok && f.Type == zapcore.ErrorType && isShutdown(err) {
			return nil
		}
		f.AddTo(enc)
	}
	keys := make([]string, 0, len(enc.Fields))
	for k := range enc.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	kv := make([]any, 0, 2*len(keys))
	for _, k := range keys {
		kv = append(kv, k, enc.Fields[k])
	}
	if e.Level >= zapcore.ErrorLevel {
		c.logger.Error(nil, e.Message, kv...)
		return nil
	}
	c.logger.Info("Warning: "+e.Message, kv...)
	return nil
}

func (klogCore) Sync() error { return nil }

// isShutdown tells whether err only says that etcd's listeners and servers
// were closed, as they are on every shutdown: not worth an error line.
func isShutdown(err error) bool {
	return errors.Is(err, net.ErrClosed) || errors.Is(err, http.ErrServerClosed) || err.Error() == "mux: server closed"
}
