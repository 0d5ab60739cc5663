# Runs one strata command line and checks its exit status and output (ctest -P script).
# -DSTRATA=<binary> -DARGS=<|-separated arguments> -DEXPECT_RC=<int> [-DEXPECT_STDOUT=<regex>]
# [-DEXPECT_STDERR=<regex>]
string(REPLACE "|" ";" ARGS "${ARGS}")
execute_process(COMMAND ${STRATA} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL EXPECT_RC)
  message(FATAL_ERROR "exit status ${rc}, expected ${EXPECT_RC}\nstdout:\n${out}\nstderr:\n${err}")
endif()
if(DEFINED EXPECT_STDOUT AND NOT out MATCHES "${EXPECT_STDOUT}")
  message(FATAL_ERROR "stdout does not match '${EXPECT_STDOUT}':\n${out}")
endif()
if(DEFINED EXPECT_STDERR AND NOT err MATCHES "${EXPECT_STDERR}")
  message(FATAL_ERROR "stderr does not match '${EXPECT_STDERR}':\n${err}")
endif()
