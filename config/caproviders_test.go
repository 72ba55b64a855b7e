package config

import (
	"strings"
	"testing"
)

// Every Cluster Autoscaler provider name is answered with the route through
// externalgrpc, naming the provider, CA's example server and tidal's flags.
func TestCAProviderAnswersWithTheExternalGRPCRoute(t *testing.T) {
	for _, name := range caProviders {
		t.Run(name, func(t *testing.T) {
			_, err := parse(t, "--cloud-provider="+name)
			if err == nil {
				t.Fatalf("--cloud-provider=%s accepted", name)
			}
			for _, want := range []string{
				`--cloud-provider="` + name + `"`, "tidal has no " + name + " provider",
				"external-grpc-cloud-provider-service", "--cloud-provider=" + name + " and your --cloud-config",
				"--cloud-provider=externalgrpc --cloud-config=FILE", "docs/externalgrpc.md",
			} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
	// A name that is no provider at all still lists tidal's and points to
	// the route.
	_, err := parse(t, "--cloud-provider=gcp")
	if err == nil || !strings.Contains(err.Error(), `want "aws", "externalgrpc" or "local"`) ||
		!strings.Contains(err.Error(), "docs/externalgrpc.md") {
		t.Errorf("--cloud-provider=gcp: %v", err)
	}
	for _, own := range []string{CloudProviderAWS, CloudProviderExternalGRPC, CloudProviderLocal} {
		if IsCAProvider(own) {
			t.Errorf("%s is tidal's own provider, not one reached through externalgrpc", own)
		}
	}
}
