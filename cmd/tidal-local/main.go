// Command tidal-local runs tidal against a real Kubernetes control plane
// embedded in the process and a local cloud: the demo of `make run`, and a
// cluster to try tidal on your own manifests (--demo=false). It is kept out
// of the production tidal binary, which links no control plane.
package main

import (
	"fmt"
	"os"

	"github.com/tidal-autoscaler/tidal/cmd/tidal-local/localapp"
)

func main() {
	if err := localapp.NewCommand().Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "tidal-local: %v\n", err)
		os.Exit(1)
	}
}
