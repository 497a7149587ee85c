# The adversarial suite (tests/adversarial/run_adversarial.py): a table of bad inputs through the
# CLI, checking exit code 1, a message naming the file or option, no signal, no hang, peak RSS and
# unchanged inputs. `random` needs nothing else; `stories` needs ../shared (skipped, code 77, without).
set(_adv_args)
if(ONNXLLM_ENABLE_ASAN)
  # Sanitizer shadow memory and slower code: the same limits would measure the instrumentation.
  set(_adv_args --max-rss-mb 1500 --timeout-scale 4)
endif()
foreach(group random stories)
  add_test(NAME adversarial.${group}
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/adversarial/run_adversarial.py
                   --cli $<TARGET_FILE:onnxllm> --work ${CMAKE_BINARY_DIR}/adversarial/${group} --group ${group}
                   --shared ${ONNXLLM_SHARED_DIR} --jobs 2 ${_adv_args})
  set_tests_properties(adversarial.${group} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600 PROCESSORS 2)
endforeach()
