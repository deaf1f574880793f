# Included by tests/CMakeLists.txt (its scope and CMAKE_CURRENT_SOURCE_DIR: tests/).
# The real thing: compiled by nvcc against the real <nccl.h> whenever CUDA, NCCL and MPI are
# present; run (label gpu) where GPUs exist, skipped (exit 77) elsewhere.
# (CUDAToolkit and MESHCAST_NCCL_LIBRARY: found by the top-level CMakeLists.txt.)
if(CUDAToolkit_FOUND AND MESHCAST_NCCL_LIBRARY AND MPI_CXX_FOUND AND NOT MESHCAST_SANITIZE)
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    add_executable(meshcast-test-nccl-gpu nccl/gpu_reshard.cu)
    # CMake 3.25 does not know nvcc 13's C++20 dialect: ask for it directly.
    target_compile_options(meshcast-test-nccl-gpu PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-std=c++20>)
    target_include_directories(meshcast-test-nccl-gpu PRIVATE ${PROJECT_SOURCE_DIR}/examples)
    target_link_libraries(meshcast-test-nccl-gpu PRIVATE meshcast::meshcast MPI::MPI_CXX CUDA::cudart ${MESHCAST_NCCL_LIBRARY})
    add_test(NAME gpu.nccl_reshard COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 $<TARGET_FILE:meshcast-test-nccl-gpu>)
    set_tests_properties(gpu.nccl_reshard PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 300)
    if(TARGET meshcast::compiled_nccl)
      # The one call in compiled mode on real GPUs: host compiler, real headers, libmeshcast-nccl
      # (and the MPI one call before it, every rank, GPUs or not).
      add_executable(meshcast-test-nccl-gpu-compiled nccl/gpu_one_call_compiled.cpp)
      # With meshcast::compiled too where MPI's library is built: one program linking both libraries.
      target_link_libraries(meshcast-test-nccl-gpu-compiled PRIVATE meshcast::compiled_nccl meshcast_build_flags MPI::MPI_CXX
                            $<TARGET_NAME_IF_EXISTS:meshcast::compiled>)
      add_test(NAME gpu.nccl_one_call_compiled COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2
               $<TARGET_FILE:meshcast-test-nccl-gpu-compiled>)
      set_tests_properties(gpu.nccl_one_call_compiled PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 300
                           PASS_REGULAR_EXPRESSION "every element right")
    endif()
    if(TARGET meshcast::benchmark)
      # The benchmark session over NCCL, timed with CUDA events (host compiler, real headers).
      add_executable(meshcast-test-nccl-gpu-benchmark nccl/gpu_benchmark.cpp)
      target_link_libraries(meshcast-test-nccl-gpu-benchmark PRIVATE meshcast::benchmark CUDA::cudart ${MESHCAST_NCCL_LIBRARY})
      add_test(NAME gpu.nccl_benchmark COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2
               $<TARGET_FILE:meshcast-test-nccl-gpu-benchmark> --benchmark_min_time=0.05)
      set_tests_properties(gpu.nccl_benchmark PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 300)
    endif()
    message(STATUS "meshcast: CUDA ${CUDAToolkit_VERSION} and NCCL found, the NCCL backend is compiled with nvcc")
  endif()
endif()
