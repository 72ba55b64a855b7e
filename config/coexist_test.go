package config

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestCoexistFlags(t *testing.T) {
	for _, tc := range []struct {
		args          []string
		wantErr       string
		wantNamespace string
		wantName      string
	}{
		{nil, "", "kube-system", "cluster-autoscaler"},
		{[]string{"--cluster-autoscaler-lease=autoscaling/ca-leader"}, "", "autoscaling", "ca-leader"},
		{[]string{"--cluster-autoscaler-lease="}, "", "", ""},
		{[]string{"--cluster-autoscaler-lease=cluster-autoscaler"}, `--cluster-autoscaler-lease="cluster-autoscaler": want NAMESPACE/NAME`, "", ""},
		{[]string{"--cluster-autoscaler-lease=Kube_System/ca"}, `--cluster-autoscaler-lease namespace="Kube_System" is not a valid namespace name`, "", ""},
		{[]string{"--cluster-autoscaler-lease=kube-system/"}, `--cluster-autoscaler-lease name must not be empty`, "", ""},
		{[]string{"--status-config-map-layout=ca"}, `--status-config-map-layout="ca": want "tidal" or "cluster-autoscaler"`, "", ""},
	} {
		o := NewOptions()
		fs := pflag.NewFlagSet("tidal", pflag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		err := o.Validate()
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%v: error %v, want one containing %q", tc.args, err, tc.wantErr)
		case tc.wantErr == "" && (o.Coexist.CALeaseNamespace != tc.wantNamespace || o.Coexist.CALeaseName != tc.wantName):
			t.Errorf("%v: watches %s/%s, want %s/%s", tc.args, o.Coexist.CALeaseNamespace, o.Coexist.CALeaseName, tc.wantNamespace, tc.wantName)
		}
	}
}
