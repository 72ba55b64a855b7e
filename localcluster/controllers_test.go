package localcluster

import (
	"context"
	"strings"
	"testing"
)

func TestUnknownDisabledControllerIsRefused(t *testing.T) {
	_, err := Start(context.Background(), Options{DisabledControllers: []string{"replicaset", "replica-set"}})
	if err == nil || !strings.Contains(err.Error(), `"replica-set"`) || !strings.Contains(err.Error(), "garbagecollector") {
		t.Errorf("Start with an unknown controller to disable = %v, want an error naming it and the known ones", err)
	}
}

func TestAPIServerFlags(t *testing.T) {
	if got := apiServerFlags(Options{APIServerFlags: []string{"--authorization-mode=RBAC"}}); strings.Join(got, " ") !=
		"--disable-admission-plugins=ServiceAccount --authorization-mode=RBAC" {
		t.Errorf("flags without service accounts: %v", got)
	}
	if got := apiServerFlags(Options{ServiceAccounts: true}); len(got) != 0 {
		t.Errorf("flags with service accounts: %v, want none", got)
	}
}
