export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_pml=ucx OMPI_MCA_pml_ucx_tls=any OMPI_MCA_pml_ucx_devices=any WM_PROJECT_DIR=/usr/share/openfoam
export LD_LIBRARY_PATH=/root/.cache/topofoam/openfoam/v1912.200626-1-patched-f72d0ebb82f73c53/lib:/root/.cache/topofoam/openfoam/v1912.200626-1-scotch-87edb02b1f8737d9/lib:$LD_LIBRARY_PATH
export PATH=/root/.cache/topofoam/openfoam/v1912.200626-1-patched-f72d0ebb82f73c53/bin:$PATH
for i in $(seq $1); do
t0=$(date +%s.%N)
mpirun -np 2 -rf map/rankfile laplacianFoam -parallel > log.run 2>&1
echo "$(date +%s) $(awk -v a=$t0 -v b=$(date +%s.%N) 'BEGIN { print b - a }') $(grep ClockTime log.run | tail -1)"
done
