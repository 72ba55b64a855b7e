package aws

import (
	"fmt"
	"strconv"
	"strings"
)

const (
	// ProviderIDPrefix starts the providerID of every EC2 node:
	// aws:///<availability-zone>/<instance-id>, as the AWS cloud
	// controller manager writes it.
	ProviderIDPrefix = "aws:///"
	// placeholderPrefix starts the ids of instances a group was asked for
	// but has not launched: i-placeholder-<asg>-<n>, as Cluster Autoscaler
	// names them.
	placeholderPrefix = "i-placeholder-"
)

// ProviderID is the providerID of instance id in zone.
func ProviderID(zone, instanceID string) string { return ProviderIDPrefix + zone + "/" + instanceID }

// ParseProviderID splits aws:///<zone>/<instance-id>. Anything else is
// rejected with an error that says what is wrong: another scheme, a
// missing zone or instance id, extra path segments (as in the ids of
// Fargate pods' nodes), or an instance id that is not i-<hex>.
func ParseProviderID(providerID string) (zone, instanceID string, err error) {
	rest, ok := strings.CutPrefix(providerID, ProviderIDPrefix)
	if !ok {
		return "", "", fmt.Errorf("providerID %q is not an EC2 instance: want %s<zone>/<instance-id>", providerID, ProviderIDPrefix)
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 2 {
		return "", "", fmt.Errorf("providerID %q: want %s<zone>/<instance-id>, got %d path segment(s)", providerID, ProviderIDPrefix, len(parts))
	}
	zone, instanceID = parts[0], parts[1]
	if zone == "" || strings.ContainsAny(zone, " \t\n") {
		return "", "", fmt.Errorf("providerID %q: the availability zone %q is empty or contains white space", providerID, zone)
	}
	if !validInstanceID(instanceID) {
		return "", "", fmt.Errorf("providerID %q: %q is not an EC2 instance id (i- followed by 8 or 17 hexadecimal digits)", providerID, instanceID)
	}
	return zone, instanceID, nil
}

// validInstanceID accepts i-<8 or 17 hex digits> and the placeholders this
// package makes.
func validInstanceID(id string) bool {
	if _, _, ok := parsePlaceholder(id); ok {
		return true
	}
	hex, ok := strings.CutPrefix(id, "i-")
	if !ok || (len(hex) != 8 && len(hex) != 17) {
		return false
	}
	for _, c := range hex {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func placeholderID(asg string, n int) string { return placeholderPrefix + asg + "-" + strconv.Itoa(n) }

// parsePlaceholder splits i-placeholder-<asg>-<n>.
func parsePlaceholder(id string) (asg string, n int, ok bool) {
	rest, found := strings.CutPrefix(id, placeholderPrefix)
	if !found {
		return "", 0, false
	}
	i := strings.LastIndex(rest, "-")
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(rest[i+1:])
	if err != nil || n < 0 {
		return "", 0, false
	}
	return rest[:i], n, true
}
