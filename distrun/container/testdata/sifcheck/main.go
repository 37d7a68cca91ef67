// sifcheck is the reference implementation of SIF (github.com/sylabs/sif/v2,
// what Apptainer and SingularityCE are built on) for container_image_test:
//
//	sifcheck IMAGE             loads IMAGE and prints the global header and
//	                           the primary system partition as one JSON object
//	sifcheck -create OUT SQFS  writes OUT as Apptainer's build does: a
//	                           definition file, a JSON object, then SQFS as
//	                           the primary system partition (amd64)
//
// Exits 1 with the library's error on stderr when it refuses a file.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/sylabs/sif/v2/pkg/sif"
)

type partition struct {
	ID        uint32 `json:"id"`
	GroupID   uint32 `json:"groupId"`
	LinkedID  uint32 `json:"linkedId"`
	Offset    int64  `json:"offset"`
	Size      int64  `json:"size"`
	Name      string `json:"name"`
	FsType    int32  `json:"fsType"`
	FsName    string `json:"fsName"`
	PartType  int32  `json:"partType"`
	PartName  string `json:"partName"`
	Arch      string `json:"arch"`
	CreatedAt int64  `json:"createdAt"`
}

type report struct {
	LaunchScript      string    `json:"launchScript"`
	Version           string    `json:"version"`
	Arch              string    `json:"arch"`
	ID                string    `json:"id"`
	CreatedAt         int64     `json:"createdAt"`
	ModifiedAt        int64     `json:"modifiedAt"`
	DescriptorsFree   int64     `json:"descriptorsFree"`
	DescriptorsTotal  int64     `json:"descriptorsTotal"`
	DescriptorsOffset int64     `json:"descriptorsOffset"`
	DescriptorsSize   int64     `json:"descriptorsSize"`
	DataOffset        int64     `json:"dataOffset"`
	DataSize          int64     `json:"dataSize"`
	Partition         partition `json:"primarySystemPartition"`
}

func primary(f *sif.FileImage) (partition, error) {
	d, err := f.GetDescriptor(sif.WithPartitionType(sif.PartPrimSys))
	if err != nil {
		return partition{}, err
	}
	fs, pt, arch, err := d.PartitionMetadata()
	if err != nil {
		return partition{}, err
	}
	linked, _ := d.LinkedID()
	return partition{
		ID: d.ID(), GroupID: d.GroupID(), LinkedID: linked,
		Offset: d.Offset(), Size: d.Size(), Name: d.Name(),
		FsType: int32(fs), FsName: fs.String(), PartType: int32(pt), PartName: pt.String(),
		Arch: arch, CreatedAt: d.CreatedAt().Unix(),
	}, nil
}

func check(path string) (report, error) {
	f, err := sif.LoadContainerFromPath(path, sif.OptLoadWithFlag(os.O_RDONLY))
	if err != nil {
		return report{}, err
	}
	defer f.UnloadContainer() //nolint:errcheck // read-only
	p, err := primary(f)
	if err != nil {
		return report{}, err
	}
	return report{
		LaunchScript: f.LaunchScript(), Version: f.Version(), Arch: f.PrimaryArch(), ID: f.ID(),
		CreatedAt: f.CreatedAt().Unix(), ModifiedAt: f.ModifiedAt().Unix(),
		DescriptorsFree: f.DescriptorsFree(), DescriptorsTotal: f.DescriptorsTotal(),
		DescriptorsOffset: f.DescriptorsOffset(), DescriptorsSize: f.DescriptorsSize(),
		DataOffset: f.DataOffset(), DataSize: f.DataSize(), Partition: p,
	}, nil
}

// create follows Apptainer's createSIF (internal/pkg/build/assemblers/sif.go).
func create(out, squashfs string) error {
	def, err := sif.NewDescriptorInput(sif.DataDeffile, bytes.NewReader([]byte("Bootstrap: scratch\n")))
	if err != nil {
		return err
	}
	labels, err := sif.NewDescriptorInput(sif.DataGenericJSON, bytes.NewReader([]byte(`{"a":"b"}`)),
		sif.OptObjectName("labels.json"))
	if err != nil {
		return err
	}
	fp, err := os.Open(squashfs)
	if err != nil {
		return err
	}
	defer fp.Close()
	part, err := sif.NewDescriptorInput(sif.DataPartition, fp,
		sif.OptPartitionMetadata(sif.FsSquash, sif.PartPrimSys, "amd64"))
	if err != nil {
		return err
	}
	f, err := sif.CreateContainerAtPath(out,
		sif.OptCreateWithLaunchScript("#!/usr/bin/env run-singularity\n"),
		sif.OptCreateWithDescriptors(def, labels, part))
	if err != nil {
		return err
	}
	return f.UnloadContainer()
}

func main() {
	if len(os.Args) == 4 && os.Args[1] == "-create" {
		if err := create(os.Args[2], os.Args[3]); err != nil {
			fmt.Fprintf(os.Stderr, "sifcheck: %s: %v\n", os.Args[2], err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: sifcheck IMAGE.sif | sifcheck -create OUT.sif SQUASHFS")
		os.Exit(2)
	}
	r, err := check(os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "sifcheck: %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	out, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		fmt.Fprintln(os.Stderr, "sifcheck:", err)
		os.Exit(1)
	}
	fmt.Println(string(out))
}
