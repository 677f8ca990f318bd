package servercmd

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
)

// IgnoredFlag is a flag of one of kcp's binaries for a feature this server
// does not have or does differently. Command lines written for kcp may set
// it; the server starts and warns once logging is set up.
type IgnoredFlag struct {
	// Name is the flag without dashes; Why says what the server does
	// instead, for the warning and --help.
	Name, Why string
	// Harmless is the value that asks for what the server does anyway: no
	// warning for it.
	Harmless string
	// Bool marks a boolean flag, which may be given without a value.
	Bool bool
}

// AddIgnoredFlags registers flags on fs; each one set to another value
// than its harmless one appends a warning to warnings.
func AddIgnoredFlags(fs *pflag.FlagSet, warnings *[]string, flags ...IgnoredFlag) {
	for _, f := range flags {
		fs.Var(ignoredValue{IgnoredFlag: f, warnings: warnings}, f.Name, "kcp's --"+f.Name+"; accepted for command lines written for kcp and ignored: "+f.Why+".")
		if f.Bool {
			fs.Lookup(f.Name).NoOptDefVal = "true"
		}
	}
}

// LogWarnings logs each warning as one line.
func LogWarnings(logger klog.Logger, warnings []string) {
	for _, w := range warnings {
		logger.Info("Warning: " + w)
	}
}

// ignoredValue is the pflag.Value of an IgnoredFlag.
type ignoredValue struct {
	IgnoredFlag
	warnings *[]string
}

func (v ignoredValue) String() string { return v.Harmless }

func (v ignoredValue) Type() string {
	if v.Bool {
		return "bool"
	}
	return "string"
}

func (v ignoredValue) Set(s string) error {
	if v.Harmless != "" && strings.EqualFold(strings.TrimSpace(s), v.Harmless) {
		return nil
	}
	*v.warnings = append(*v.warnings, fmt.Sprintf("--%s is accepted and ignored: %s", v.Name, v.Why))
	return nil
}

// IsBoolFlag lets a boolean flag be given without a value.
func (v ignoredValue) IsBoolFlag() bool { return v.Bool }
