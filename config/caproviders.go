package config

import (
	"fmt"
	"slices"
)

// caProviders are the --cloud-provider names Cluster Autoscaler builds in
// (its cloudprovider/router, master of 2026), other than the ones tidal
// has itself (aws, externalgrpc). "packet" is CA's older name of
// equinixmetal.
var caProviders = []string{
	"alicloud", "azure", "baiducloud", "bizflycloud", "brightbox", "cherryservers", "civo", "cloudstack",
	"clusterapi", "coreweave", "digitalocean", "equinixmetal", "exoscale", "gce", "hetzner", "huaweicloud",
	"ionoscloud", "kamatera", "kubemark", "kwok", "linode", "magnum", "oci", "ovhcloud", "packet", "rancher",
	"scaleway", "tencentcloud", "utho", "volcengine", "vultr",
}

// IsCAProvider tells whether name is one of Cluster Autoscaler's in-tree
// providers that tidal reaches only through externalgrpc.
func IsCAProvider(name string) bool { return slices.Contains(caProviders, name) }

// externalGRPCRoute is the answer to --cloud-provider=<a CA provider>: the
// way to it through Cluster Autoscaler's example externalgrpc server.
func externalGRPCRoute(name string) error {
	return fmt.Errorf("--cloud-provider=%q: tidal has no %s provider of its own; run Cluster Autoscaler's example "+
		"externalgrpc server (cloudprovider/externalgrpc/examples/external-grpc-cloud-provider-service) with "+
		"--cloud-provider=%s and your --cloud-config/--nodes, and start tidal with --cloud-provider=%s "+
		"--cloud-config=FILE naming its address (docs/externalgrpc.md, \"Any Cluster Autoscaler provider\")",
		name, name, name, CloudProviderExternalGRPC)
}
