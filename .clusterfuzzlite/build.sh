#!/bin/bash -eu
# ClusterFuzzLite runs $SRC/build.sh: the OSS-Fuzz build script, unchanged.
exec bash -eu "$SRC/guardlift/fuzz/oss-fuzz/build.sh"
