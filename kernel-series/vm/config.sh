# config.sh - knobs shared by the untorn VM scripts (sourced, not run).
#
# The patched kernel carries a TEST-ONLY nvme-core parameter that makes the
# driver assume a power-fail atomic write unit (AWUPF, 0's based, in logical
# blocks) for controllers that report none (QEMU 7.2's NVMe reports AWUPF=0).
# With 4 KiB LBAs, 3 => 16 KiB.  The unpatched kernel ignores the unknown
# parameter, so the same command line works for both.
# Name from K1's patch series (kernel-series/patches); change it here only.
NVME_AID_PARAM=${NVME_AID_PARAM:-nvme_core.test_awupf}
NVME_AID_ON=${NVME_AID_ON:-3}
NVME_AID_OFF=${NVME_AID_OFF:-0}

# scsi_debug (built in): RAM-backed disk that implements WRITE ATOMIC(16).
# Atomic knobs in 6.12 drivers/scsi/scsi_debug.c: atomic_wr, atomic_wr_max_length,
# atomic_wr_align, atomic_wr_gran, atomic_wr_max_length_bndry, atomic_wr_max_bndry.
SCSI_DEBUG_ARGS=${SCSI_DEBUG_ARGS:-scsi_debug.atomic_wr=1 scsi_debug.dev_size_mb=32 scsi_debug.sector_size=4096 scsi_debug.atomic_wr_gran=1 scsi_debug.atomic_wr_align=1}

# Where images, initramfs and run logs live (outside the repository).
UNTORN_VM_DIR=${UNTORN_VM_DIR:-/var/tmp/untorn-vm}
