// Command tidal is a Kubernetes autoscaler: one process running a pod loop
// (horizontal pod autoscaling) and a node loop (cluster autoscaling).
package main

import (
	"fmt"
	"os"

	"github.com/tidal-autoscaler/tidal/cmd/tidal/app"
)

func main() {
	if err := app.NewCommand().Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "tidal: %v\n", err)
		os.Exit(1)
	}
}
