package hpa

import "time"

// Defaults of the kube-controller-manager flags that shape the HPA algorithm.
const (
	// DefaultTolerance is --horizontal-pod-autoscaler-tolerance.
	DefaultTolerance = 0.1
	// DefaultCPUInitializationPeriod is --horizontal-pod-autoscaler-cpu-initialization-period.
	DefaultCPUInitializationPeriod = 5 * time.Minute
	// DefaultInitialReadinessDelay is --horizontal-pod-autoscaler-initial-readiness-delay.
	DefaultInitialReadinessDelay = 30 * time.Second
	// DefaultDownscaleStabilizationWindow is
	// --horizontal-pod-autoscaler-downscale-stabilization.
	DefaultDownscaleStabilizationWindow = 5 * time.Minute
)

// Config carries the controller-wide settings (the kube-controller-manager
// flags) that the calculation depends on.
type Config struct {
	// Tolerance is the usage-ratio tolerance applied in both directions unless
	// an autoscaler's behavior overrides one direction.
	Tolerance float64
	// CPUInitializationPeriod and InitialReadinessDelay decide which pods'
	// cpu samples are set aside as unready; see GroupPods.
	CPUInitializationPeriod time.Duration
	InitialReadinessDelay   time.Duration
	// DownscaleStabilizationWindow is the scale-down window used without
	// behavior, and the default scale-down window with behavior.
	DownscaleStabilizationWindow time.Duration
}

// DefaultConfig returns the settings Kubernetes uses when no flag is given.
func DefaultConfig() Config {
	return Config{
		Tolerance:                    DefaultTolerance,
		CPUInitializationPeriod:      DefaultCPUInitializationPeriod,
		InitialReadinessDelay:        DefaultInitialReadinessDelay,
		DownscaleStabilizationWindow: DefaultDownscaleStabilizationWindow,
	}
}

// Readiness returns the readiness timing part of the configuration.
func (c Config) Readiness() Readiness {
	return Readiness{
		CPUInitializationPeriod: c.CPUInitializationPeriod,
		InitialReadinessDelay:   c.InitialReadinessDelay,
	}
}
