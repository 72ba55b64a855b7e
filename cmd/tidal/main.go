// Command tidal is a Kubernetes autoscaler: one process running a pod loop
// (horizontal pod autoscaling) and a node loop (cluster autoscaling).
package main

import (
	"fmt"
	"os"
	// Schedules name IANA time zones; the image need not carry a zone
	// database.
	_ "time/tzdata"

	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/cmd/tidal/app"
)

func main() {
	err := app.NewCommand().Execute()
	klog.Flush()
	if err != nil {
		fmt.Fprintf(os.Stderr, "tidal: %v\n", err)
		os.Exit(1)
	}
}
