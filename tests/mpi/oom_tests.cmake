# Included from tests/CMakeLists.txt where MPI is found.
# One rank out of memory alone (an LD_PRELOAD module refusing the N-th allocation of one size):
# every rank stops at once. Not under the sanitizers, whose runtime must come first.
if(NOT MESHCAST_SANITIZE)
  add_library(meshcast-test-fail-nth-new MODULE mpi/fail_nth_new.cpp)
  add_executable(meshcast-test-share-schedule-oom mpi/share_schedule_oom.cpp)
  target_link_libraries(meshcast-test-share-schedule-oom PRIVATE meshcast::meshcast meshcast_build_flags MPI::MPI_CXX)
  add_test(NAME mpi.share_schedule_oom COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/cli/check_share_schedule_oom.py
           $<TARGET_FILE:meshcast-test-share-schedule-oom> ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:meshcast-test-fail-nth-new>)
  set_tests_properties(mpi.share_schedule_oom PROPERTIES LABELS mpi TIMEOUT 600 PROCESSORS 2)
  add_executable(meshcast-test-executor-setup-oom mpi/executor_setup_oom.cpp)
  target_link_libraries(meshcast-test-executor-setup-oom PRIVATE meshcast::meshcast meshcast_build_flags MPI::MPI_CXX
                                                                 ${CMAKE_DL_LIBS})
  add_test(NAME mpi.executor_setup_oom COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/cli/check_executor_setup_oom.py
           $<TARGET_FILE:meshcast-test-executor-setup-oom> ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:meshcast-test-fail-nth-new>)
  set_tests_properties(mpi.executor_setup_oom PROPERTIES LABELS mpi TIMEOUT 600 PROCESSORS 2)
  add_test(NAME mpi.reshard_oom COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/cli/check_reshard_oom.py
           $<TARGET_FILE:meshcast-reshard> ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:meshcast-test-fail-nth-new>)
  set_tests_properties(mpi.reshard_oom PROPERTIES LABELS mpi TIMEOUT 600 PROCESSORS 2)
endif()
if(NOT MESHCAST_SANITIZE AND TARGET meshcast-autoshard-mlp-mpi)
  add_test(NAME mpi.autoshard_mlp_oom COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/cli/check_autoshard_mlp_oom.py
           $<TARGET_FILE:meshcast-autoshard-mlp-mpi> ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:meshcast-test-fail-nth-new>)
  set_tests_properties(mpi.autoshard_mlp_oom PROPERTIES LABELS mpi TIMEOUT 600 PROCESSORS 2)
endif()
if(NOT MESHCAST_SANITIZE AND TARGET meshcast-pipeline-mpi)
  add_test(NAME mpi.pipeline_oom COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/cli/check_pipeline_mpi_oom.py
           $<TARGET_FILE:meshcast-pipeline-mpi> ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:meshcast-test-fail-nth-new>
           ${PROJECT_SOURCE_DIR}/examples/pipelines)
  set_tests_properties(mpi.pipeline_oom PROPERTIES LABELS mpi TIMEOUT 600 PROCESSORS 2)
endif()
