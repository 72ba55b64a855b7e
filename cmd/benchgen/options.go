package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/tidal-autoscaler/tidal/benchgen"
)

// Output formats.
const (
	formatCanonical = "canonical"
	formatYAML      = "yaml"
)

// options are the validated command-line options.
type options struct {
	params benchgen.Params
	format string
	output string // "" or "-" for standard output
	stored bool   // objects as an API server stores them
}

// parseOptions parses and validates args. It returns code -1 when the
// command should proceed, else the exit code (after printing why).
func parseOptions(args []string, stderr io.Writer) (options, int) {
	fs := flag.NewFlagSet("benchgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: benchgen [-size S1|S2|S3|S4|S5] [-format canonical|yaml [-stored]] [-o file]")
		fs.PrintDefaults()
	}
	size := fs.String("size", "S1", "cluster size: "+strings.Join(benchgen.PresetNames(), ", "))
	format := fs.String("format", formatCanonical, "output format: canonical or yaml")
	output := fs.String("o", "-", "output file (- for standard output)")
	stored := fs.Bool("stored", false, "with -format yaml: the objects as an API server stores them "+
		"(defaults, admission, statuses, managed fields), not as generated")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return options{}, exitOK
		}
		return options{}, exitUsage // the flag package printed the error
	}
	opts, err := validate(*size, *format, *output, *stored, fs.Args())
	if err != nil {
		fmt.Fprintf(stderr, "benchgen: %v\n", err)
		fs.Usage()
		return options{}, exitUsage
	}
	return opts, -1
}

// validate checks the flag values and builds the options.
func validate(size, format, output string, stored bool, rest []string) (options, error) {
	if len(rest) > 0 {
		return options{}, fmt.Errorf("unexpected argument %q (all inputs are flags)", rest[0])
	}
	params, err := benchgen.Preset(strings.ToUpper(size))
	if err != nil {
		return options{}, fmt.Errorf("unknown -size %q (accepted: %s)",
			size, strings.Join(benchgen.PresetNames(), ", "))
	}
	if format != formatCanonical && format != formatYAML {
		return options{}, fmt.Errorf("unknown -format %q (accepted: %s, %s)",
			format, formatCanonical, formatYAML)
	}
	if output == "" {
		return options{}, errors.New("-o must not be empty (use - for standard output)")
	}
	if stored && format != formatYAML {
		return options{}, errors.New("-stored needs -format yaml (the canonical listing is of the generated cluster)")
	}
	return options{params: params, format: format, output: output, stored: stored}, nil
}
