# Included by tests/CMakeLists.txt (its scope and CMAKE_CURRENT_SOURCE_DIR: tests/).
# The emulated multi-host cluster (scripts/cluster.sh; label cluster): network namespaces as hosts,
# rate-limited NICs, MPI across them. Each test brings its own cluster up and down (the lock keeps
# them apart, PROCESSORS keeps other tests off the two cores while they time traffic); where
# namespaces cannot be made (not root) they are skipped. The namespace prefix is derived from the
# build folder, so builds in different folders can run their cluster tests at the same time.
if(MPI_CXX_FOUND AND NOT MESHCAST_SANITIZE)
  add_executable(meshcast-finalize-repro cluster/finalize_repro.c)
  set_source_files_properties(cluster/finalize_repro.c PROPERTIES LANGUAGE CXX)
  target_link_libraries(meshcast-finalize-repro PRIVATE MPI::MPI_CXX)
  string(MD5 cluster_tag "${CMAKE_BINARY_DIR}")
  string(SUBSTRING "${cluster_tag}" 0 6 cluster_tag)
  set(on_cluster ${CMAKE_CURRENT_SOURCE_DIR}/cluster/on_cluster.sh)
  set(reshard $<TARGET_FILE:meshcast-reshard>)
  # NIC shaping: one flow gets the rate, two flows into (or out of) one NIC share it.
  add_test(NAME cluster.shaping COMMAND bash ${on_cluster} --hosts 3 --mbit 200 --plain --
           ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/cluster/shaping.py --seconds 4 --check 0.15)
  # (2,2) on hosts 0-1 -> (3,2) on hosts 2-4, 8 MiB int32 over 500 Mbit/s NICs: exact.
  add_test(NAME cluster.reshard COMMAND bash ${on_cluster} --hosts 5 --mbit 500 --expect " 0 wrong elements" --
           -n 10 ${reshard} --shape 256x128x64 --src-mesh 2x2 --src-spec R,S1,R --dst-mesh 3x2 --dst-spec S0,R,R
           --devices-per-host 2 --strategy send_recv --solver greedy --nic-gbps 0.5 --latency-us 100)
  # Same mesh (4,2) on 4 hosts of 2, with 5 ms delay and 1% loss each way on host 1's NIC: S0,S1 ->
  # S1,S0 (16 MiB, send_recv) and S0,S1 -> R,S0 (4 MiB, broadcast and send_recv_allgather), each in
  # both execution modes (tests/cluster/reshard_matrix.sh): every run exact with its source shards
  # unwritten (exit 0), and the delay line did drop packets.
  add_test(NAME cluster.reshard_lossy COMMAND bash ${on_cluster} --hosts 4 --mbit 500 --netem 1:5:1 --timeout 150 --plain --
           bash ${CMAKE_CURRENT_SOURCE_DIR}/cluster/reshard_matrix.sh ${reshard})
  # Faults (tests/cluster/faults.py): 4 hosts of 2 at 50 Mbit/s, a (4,2) same-mesh reshard of
  # 2048x2048 int32 repeated with --timeout-s 5; once it is under way, host 2's link is cut or its
  # ranks are killed (SIGKILL). Every other rank must end, and mpiexec exit non-zero, within 5 + 8 s
  # of the fault, and stderr name a device of host 2; after a cut, host 2's own ranks must end in
  # that time too. fault_kill_* keep hydra from ending the job itself (-disable-auto-cleanup), so
  # the ranks must notice; fault_kill_hydra is hydra's default (it ends the job at once, naming the
  # host's address). S0,S1 -> S1,S0 with send_recv, S0,S1 -> R,S0 with broadcast (chains) or
  # send_recv_allgather.
  set(faults ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/cluster/faults.py --reshard ${reshard})
  add_test(NAME cluster.fault_cut_ordered COMMAND ${faults} --fault cut --mode ordered)
  add_test(NAME cluster.fault_cut_concurrent COMMAND ${faults} --fault cut --mode concurrent --strategy broadcast --dst-spec R,S0)
  add_test(NAME cluster.fault_kill_ordered COMMAND ${faults} --fault kill --mode ordered)
  add_test(NAME cluster.fault_kill_concurrent COMMAND ${faults} --fault kill --mode concurrent --strategy send_recv_allgather
           --dst-spec R,S0)
  add_test(NAME cluster.fault_kill_hydra COMMAND ${faults} --fault kill --mode concurrent --auto-cleanup)
  # MPI_Finalize of MPICH 4.0.2 over UCX/TCP hangs in about half of all runs without the launcher's
  # fix (scripts/cluster/ucx_finalize_progress.c); 3 runs of the all-to-all repro must all end.
  add_test(NAME cluster.finalize COMMAND bash ${on_cluster} --hosts 5 --mbit 500 --runs 3 --timeout 30 --expect "finalize-repro: ok" --
           -ppn 2 -n 10 $<TARGET_FILE:meshcast-finalize-repro> 1048576)
  # The seed's 6-stage U-Net on 6 hosts at 200 Mbit/s (the model calibrated there: payload 95.6% of
  # the line rate, 100 us per transfer): the measured makespans rank the policies as the simulator
  # does and lie within 25% of the simulated ones.
  add_test(NAME cluster.pipeline COMMAND bash ${on_cluster} --hosts 6 --mbit 200 --timeout 150 --plain --
           ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/mpi/check_pipeline_mpi.py
           --cluster "bash ${PROJECT_SOURCE_DIR}/scripts/cluster.sh mpiexec -ppn 1"
           --network "--nic-gbps 0.2 --nic-efficiency 0.956 --latency-us 100"
           $<TARGET_FILE:meshcast-pipeline-mpi> $<TARGET_FILE:meshcast-pipeline> ${PROJECT_SOURCE_DIR}/examples/pipelines)
  # How the ordered executor posts (tests/cluster/check_ordered.py, 4 hosts of 2 at 200 Mbit/s, 4
  # runs each, read from execution traces): at both ends of every exchange (two devices sending
  # each other at one model time) the rendezvous send is posted no later than the receive; an
  # eager transfer's data leaves only once its receiver has started the receive.
  foreach(check exchanges clearance)
    add_test(NAME cluster.ordered_${check} COMMAND bash ${on_cluster} --hosts 4 --mbit 200 --timeout 150 --plain --
             ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/cluster/check_ordered.py --reshard ${reshard} --check ${check})
  endforeach()
  set_tests_properties(cluster.shaping cluster.reshard cluster.reshard_lossy cluster.finalize cluster.pipeline cluster.ordered_exchanges cluster.ordered_clearance
    cluster.fault_cut_ordered cluster.fault_cut_concurrent cluster.fault_kill_ordered cluster.fault_kill_concurrent
    cluster.fault_kill_hydra PROPERTIES
    LABELS cluster RESOURCE_LOCK meshcast_cluster SKIP_RETURN_CODE 77 PROCESSORS 2 TIMEOUT 180
    ENVIRONMENT "MC_CLUSTER_PREFIX=mc${cluster_tag}-;MC_CLUSTER_MPIEXEC=${MPIEXEC_EXECUTABLE}")
endif()
