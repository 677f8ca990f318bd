package embeddedetcd

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

func TestEtcdWarningsAndErrorsReachTheProcessLog(t *testing.T) {
	var lines []string
	logger := funcr.New(func(prefix, args string) { lines = append(lines, prefix+" "+args) }, funcr.Options{})
	z := zap.New(newKlogCore(logger, zapcore.WarnLevel)).With(zap.String("member", "shard"))

	z.Info("applied entries")
	z.Warn("slow fdatasync", zap.Duration("took", 0))
	z.Error("lost leader", zap.Int("term", 3))
	z.Error("serving failed", zap.Error(fmt.Errorf("accept: %w", net.ErrClosed)))
	z.Error("serving failed", zap.Error(errors.New("mux: server closed")))

	if len(lines) != 2 {
		t.Fatalf("got %d lines, want the warning and the error only: %q", len(lines), lines)
	}
	for i, want := range []string{`"Warning: slow fdatasync"`, `"lost leader"`} {
		if !strings.Contains(lines[i], want) || !strings.Contains(lines[i], `"member"="shard"`) {
			t.Errorf("line %d = %q, want %s with the member field", i, lines[i], want)
		}
	}
	if !strings.Contains(lines[1], `"term"=3`) {
		t.Errorf("error line %q lost its field", lines[1])
	}
}
