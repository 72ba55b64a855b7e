package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// binaryBudget is the most the production binary may weigh stripped
// (-ldflags "-s -w", as the image builds it), in bytes (MB = 10^6):
// 121.1 MB measured (docs/deploy.md says why it is that large), plus a
// margin of 4 MB for dependency updates. A change that adds more fails
// here and must say why in docs/deploy.md, with the new figure.
const binaryBudget = 130_000_000

// The production binary stays within its budget. It links the binary,
// which takes a minute or more; -short leaves it out.
func TestProductionBinarySize(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: linking the production binary takes a minute or more")
	}
	out := filepath.Join(t.TempDir(), "tidal")
	build := exec.Command("go", "build", "-ldflags", "-s -w", "-o", out, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, msg)
	}
	info, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("production binary, stripped: %.1f MB (budget %.1f MB)", float64(info.Size())/1e6, float64(binaryBudget)/1e6)
	if info.Size() > binaryBudget {
		t.Errorf("the production binary is %.1f MB stripped, over its budget of %.1f MB: see which packages grew with "+
			"`go tool nm -size -sort size`, and keep docs/deploy.md's figures and this budget in step",
			float64(info.Size())/1e6, float64(binaryBudget)/1e6)
	}
}
