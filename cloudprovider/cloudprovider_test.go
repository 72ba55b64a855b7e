package cloudprovider

import (
	"slices"
	"testing"
)

type plainProvider struct{ CloudProvider }

type labelledProvider struct {
	CloudProvider
	labels []string
}

func (p labelledProvider) BalancingIgnoredLabels() []string { return p.labels }

func TestBalancingIgnoredLabelsComeFromTheProvider(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    CloudProvider
		want []string
	}{
		{"provider without labels of its own", plainProvider{}, nil},
		{"provider naming its labels", labelledProvider{labels: []string{"example.com/pool"}}, []string{"example.com/pool"}},
	} {
		if got := BalancingIgnoredLabels(tc.p); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
