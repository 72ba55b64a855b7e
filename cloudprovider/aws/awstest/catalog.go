package awstest

// InstanceType is what DescribeInstanceTypes tells about an instance type.
type InstanceType struct {
	Name          string
	VCPUs         int
	MemoryMiB     int
	Architectures []string
	// MaxENIs and IPv4PerENI are the network interface limits that bound
	// the pods of a node with the VPC CNI.
	MaxENIs    int
	IPv4PerENI int
	// GPUs is the number of GPUs, made by GPUManufacturer (e.g. NVIDIA).
	GPUs            int
	GPUManufacturer string
	GPUName         string
	GPUMemoryMiB    int
}

// DefaultInstanceTypes is a small catalog of real instance types with their
// published vCPU, memory, network interface and GPU figures.
func DefaultInstanceTypes() []InstanceType {
	x86 := []string{"x86_64"}
	return []InstanceType{
		{Name: "t3.medium", VCPUs: 2, MemoryMiB: 4096, Architectures: []string{"x86_64"}, MaxENIs: 3, IPv4PerENI: 6},
		{Name: "m5.large", VCPUs: 2, MemoryMiB: 8192, Architectures: x86, MaxENIs: 3, IPv4PerENI: 10},
		{Name: "m5.xlarge", VCPUs: 4, MemoryMiB: 16384, Architectures: x86, MaxENIs: 4, IPv4PerENI: 15},
		{Name: "m5.2xlarge", VCPUs: 8, MemoryMiB: 32768, Architectures: x86, MaxENIs: 4, IPv4PerENI: 15},
		{Name: "c5.xlarge", VCPUs: 4, MemoryMiB: 8192, Architectures: x86, MaxENIs: 4, IPv4PerENI: 15},
		{Name: "r5.large", VCPUs: 2, MemoryMiB: 16384, Architectures: x86, MaxENIs: 3, IPv4PerENI: 10},
		{Name: "m6g.large", VCPUs: 2, MemoryMiB: 8192, Architectures: []string{"arm64"}, MaxENIs: 3, IPv4PerENI: 10},
		{Name: "g4dn.xlarge", VCPUs: 4, MemoryMiB: 16384, Architectures: x86, MaxENIs: 3, IPv4PerENI: 10,
			GPUs: 1, GPUManufacturer: "NVIDIA", GPUName: "T4", GPUMemoryMiB: 16384},
		{Name: "p3.2xlarge", VCPUs: 8, MemoryMiB: 62464, Architectures: x86, MaxENIs: 4, IPv4PerENI: 15,
			GPUs: 1, GPUManufacturer: "NVIDIA", GPUName: "V100", GPUMemoryMiB: 16384},
	}
}
