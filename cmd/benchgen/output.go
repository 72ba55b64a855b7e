package main

import (
	"io"
	"os"
	"path/filepath"

	"github.com/tidal-autoscaler/tidal/benchgen"
)

// writeCluster generates the cluster and writes it where opts say.
func writeCluster(opts options, stdout io.Writer) error {
	c := benchgen.Generate(opts.params)
	if opts.stored {
		if err := c.Store(benchgen.StoreOptions{}); err != nil {
			return err
		}
	}
	write := c.WriteCanonical
	if opts.format == formatYAML {
		write = c.WriteYAML
	}
	if opts.output == "-" {
		return write(stdout)
	}
	return writeFile(opts.output, write)
}

// writeFile writes path through a temporary file in the same directory and
// renames it into place, so a failure never leaves a truncated file.
func writeFile(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op once renamed
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
