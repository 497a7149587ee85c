# The Python package: pytest over build/python (tests/python), one ctest test per file.
# `pip install .` into a fresh venv builds everything again from a copy of the sources (15 min on
# a cold cache, 2 min warm), so it is its own target: `make pip-test`.
if(TARGET python)
  set(python_test_env
      PYTHONPATH=${CMAKE_BINARY_DIR}/python
      PYTHONDONTWRITEBYTECODE=1
      ONNXLLM_SHARED_DIR=${ONNXLLM_SHARED_DIR}
      ONNXLLM_SOURCE_DIR=${PROJECT_SOURCE_DIR}
      ONNXLLM_CLI=$<TARGET_FILE:onnxllm>
      ONNXLLM_ORACLE_DIR=${CMAKE_BINARY_DIR}/oracle
      ${ONNXLLM_SANITIZER_ENV})
  foreach(part api errors conformance tutorial examples readme builder_families builder_prequant builder_moe builder_gptoss gguf optimum engine server guidance fusion benchmark_scripts)
    add_test(NAME python_${part}
             COMMAND /usr/bin/python3 -m pytest -q -p no:cacheprovider ${PROJECT_SOURCE_DIR}/tests/python/test_${part}.py
             WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/python)
    set_tests_properties(python_${part} PROPERTIES ENVIRONMENT "${python_test_env}" TIMEOUT 300)
  endforeach()
endif()
