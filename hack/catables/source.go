package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// source reads files of Cluster Autoscaler's module (paths relative to its
// root, the cluster-autoscaler directory of kubernetes/autoscaler).
type source interface {
	readFile(path string) ([]byte, error)
	// goFiles lists the non-test Go files of a directory.
	goFiles(dir string) ([]string, error)
	// describe names the release read, for the generated files' headers.
	describe() string
}

// dirSource is an unpacked module, as `go mod download` leaves it.
type dirSource struct{ root, version string }

func (s dirSource) readFile(path string) ([]byte, error) {
	return os.ReadFile(filepath.Join(s.root, path))
}

func (s dirSource) goFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(s.root, dir))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		out = append(out, dir+"/"+e.Name())
	}
	return keepGoFiles(out), nil
}

func (s dirSource) describe() string { return s.version }

// gitSource is a tag or commit of a clone of kubernetes/autoscaler (bare
// or not).
type gitSource struct{ repo, ref, commit string }

func newGitSource(repo, ref string) (gitSource, error) {
	out, err := git(repo, "rev-parse", "--verify", ref+"^{commit}")
	if err != nil {
		return gitSource{}, err
	}
	return gitSource{repo: repo, ref: ref, commit: strings.TrimSpace(string(out))}, nil
}

func (s gitSource) readFile(path string) ([]byte, error) {
	return git(s.repo, "show", s.commit+":cluster-autoscaler/"+path)
}

func (s gitSource) goFiles(dir string) ([]string, error) {
	out, err := git(s.repo, "ls-tree", "--name-only", s.commit, "cluster-autoscaler/"+dir+"/")
	if err != nil {
		return nil, err
	}
	var files []string
	for _, l := range strings.Fields(string(out)) {
		files = append(files, strings.TrimPrefix(l, "cluster-autoscaler/"))
	}
	return keepGoFiles(files), nil
}

func (s gitSource) describe() string { return s.ref + " (commit " + s.commit + ")" }

func git(repo string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

func keepGoFiles(paths []string) []string {
	var out []string
	for _, p := range paths {
		if strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			out = append(out, p)
		}
	}
	return out
}
