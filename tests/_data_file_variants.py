"""Hand-written ``.trc`` and ``.mot``/``.sto`` variants: layouts OpenSim 4.6 reads and ones it refuses.

Each variant is two markers ``a``, ``b`` over two frames; :data:`VALUES` holds the positions written
in the file (file units) for the ones that read.  Used by tests/test_storage.py (expected values and
errors written by hand) and tests/validation/test_data_files_opensim.py (OpenSim 4.6 reads the same
files).
"""

from __future__ import annotations

import math

KEYS = "DataRate\tCameraRate\tNumFrames\tNumMarkers\tUnits\tOrigDataRate\tOrigDataStartFrame\tOrigNumFrames\n"
VALS = "100\t100\t2\t2\t{u}\t100\t1\t2\n"
NAMES = "Frame#\tTime\ta\t\t\tb\t\t\t\n"
XYZ = "\t\tX1\tY1\tZ1\tX2\tY2\tZ2\t\n"
ROW1 = "1\t0\t1.5\t-2\t3\t4\t5\t6.25\t\n"
ROW2 = "2\t0.01\t7\t8\t9\t10\t11\t12\n"
NAN = math.nan
FULL = [[[1.5, -2, 3], [4, 5, 6.25]], [[7, 8, 9], [10, 11, 12]]]


def _file(rows=ROW1 + ROW2, head="PathFileType\t4\t(X/Y/Z)\tx.trc\n", keys=KEYS, vals=VALS, names=NAMES,
          xyz=XYZ, gap="\n", units="mm"):
    return head + keys + vals.format(u=units) + names + xyz + gap + rows


#: the variant mbjax reads and OpenSim refuses (a whitespace-only line after the data is a one-field row
#: to TRCFileAdapter; it holds no data)
MBJAX_ONLY = {"whitespace_line_at_end"}

#: name -> (file text, positions (2, 2, 3) in file units, units)
READS = {
    "opensim_layout": (_file(), FULL, "mm"),
    # the Rajagopal walking trial's header: spaces on line 1, double tabs and padded values on line 3
    "double_tab_header": (_file(head="PathFileType  4\t(X/Y/Z) C:\\data\\\n",
                                vals="  100.0\t\t  100.0\t\t    2\t\t     2\t\t {u}\t  100.0\t      1\t    2\n"),
                          FULL, "mm"),
    "trailing_tabs_on_header_lines": (_file(keys=KEYS[:-1] + "\t\t\t\n", vals=VALS[:-1] + "\t\t\n",
                                            names=NAMES[:-1] + "\t\t\n"), FULL, "mm"),
    "no_trailing_tab": (_file(rows=ROW1.replace("\t\n", "\n") + ROW2), FULL, "mm"),
    "spaces_around_fields": (_file(rows="1\t 0 \t 1.5\t-2 \t3\t4\t5\t6.25\n" + ROW2), FULL, "mm"),
    "crlf": (_file().replace("\n", "\r\n"), FULL, "mm"),
    "pathfiletype_3": (_file(head="PathFileType\t3\t(X/Y/Z)\tx.trc\n"), FULL, "mm"),
    "no_blank_line_before_data": (_file(gap=""), FULL, "mm"),
    "tab_only_line_before_data": (_file(gap="\t\t\t\t\t\n"), FULL, "mm"),
    "metres": (_file(units="m"), FULL, "m"),
    "millimeters_spelled_out": (_file(units="millimeters"), FULL, "millimeters"),
    "empty_marker_mid_row": (_file(rows="1\t0\t\t\t\t4\t5\t6.25\n" + ROW2),
                             [[[NAN] * 3, [4, 5, 6.25]], FULL[1]], "mm"),
    "empty_last_marker_with_closing_tab": (_file(rows="1\t0\t1.5\t-2\t3\t\t\t\t\n" + ROW2),
                                           [[[1.5, -2, 3], [NAN] * 3], FULL[1]], "mm"),
    "one_empty_component": (_file(rows="1\t0\t1.5\t\t3\t4\t5\t6.25\n" + ROW2),
                            [[[NAN] * 3, [4, 5, 6.25]], FULL[1]], "mm"),
    "nan_text": (_file(rows="1\t0\tNaN\tNaN\tNaN\t4\t5\t6.25\n" + ROW2), [[[NAN] * 3, [4, 5, 6.25]], FULL[1]],
                 "mm"),
    "extra_component_labels": (_file(xyz="\t\tX1\tY1\tZ1\tX2\tY2\tZ2\tX3\tY3\tZ3\n"), FULL, "mm"),
    "numframes_disagrees": (_file(vals="100\t100\t7\t2\t{u}\t100\t1\t7\n"), FULL, "mm"),
    "empty_frame_number": (_file(rows=ROW1 + "\t0.01\t7\t8\t9\t10\t11\t12\n"), FULL, "mm"),
    "whitespace_line_at_end": (_file(rows=ROW1 + ROW2 + "   \n\n"), FULL, "mm"),
}

#: name -> (file text, regex the error must match: file name, line, what is wrong)
REFUSED = {
    "short_row": (_file(rows=ROW1 + "2\t0.01\t7\t8\t9\n"), r"short_row\.trc:8: 5 fields, expected 8"),
    "empty_last_marker_without_closing_tab": (_file(rows=ROW1 + "2\t0.01\t7\t8\t9\t\t\t\n"),
                                              r"without_closing_tab\.trc:8: 7 fields, expected 8.*closing tab"),
    "unlabelled_column": (_file(rows=ROW1 + "2\t0.01\t7\t8\t9\t10\t11\t12\t13\n"),
                          r"unlabelled_column\.trc:8: 9 fields, expected 8: column 9 \['13'\] not under a marker"),
    "two_trailing_tabs": (_file(rows=ROW1 + ROW2.replace("\n", "\t\t\n")),
                          r"two_trailing_tabs\.trc:8: 9 fields, expected 8: column 9 \[''\]"),
    "space_separated": (_file(rows=ROW1 + ROW2.replace("\t", " ")),
                        r"space_separated\.trc:8: 1 fields, expected 8.*separated by tabs"),
    "five_header_keys": (_file(keys="DataRate\tCameraRate\tNumFrames\tNumMarkers\tUnits\n",
                               vals="100\t100\t2\t2\t{u}\n"), r"five_header_keys\.trc:2: header keys.*OrigDataRate"),
    "fewer_values": (_file(vals="100\t100\t2\t2\t{u}\t100\t1\n"),
                     r"fewer_values\.trc:3: 7 header values for the 8 header keys"),
    "names_disagree_with_nummarkers": (_file(names=NAMES[:-1] + "c\n"),
                                       r"nummarkers\.trc:4: 3 marker names but the header says NumMarkers=2"),
    "bad_component_label": (_file(xyz=XYZ.replace("Y2", "y2")),
                            r"bad_component_label\.trc:5: component label 5 is 'y2', expected 'Y2' \(marker 'b'\)"),
    "unknown_units": (_file(units="inches"), r"unknown_units\.trc:3: Units='inches' is not supported"),
    "not_a_number": (_file(rows=ROW1 + "2\t0.01\t7\tfoo\t9\t10\t11\t12\n"),
                     r"not_a_number\.trc:8: column 4 \('a Y'\): cannot read 'foo'"),
    "rows_after_empty_line": (_file(rows=ROW1 + "\n" + ROW2),
                              r"rows_after_empty_line\.trc:9: data after the empty line 8"),
    "empty_time": (_file(rows=ROW1 + "2\t\t7\t8\t9\t10\t11\t12\n"), r"empty_time\.trc:8: column 2 \('Time'\) is empty"),
    "not_trc": ("hello\n" * 6, r"not_trc\.trc:1: not a \.trc file"),
    "repeated_time": (_file(rows=ROW1 + ROW2.replace("0.01", "0", 1)),
                      r"repeated_time\.trc:8: time 0\.0 \(frame 2\) does not increase from the previous row's 0\.0"),
    "decreasing_time": (_file(rows=ROW1.replace("1\t0\t", "1\t0.02\t", 1) + ROW2),
                        r"decreasing_time\.trc:8: time 0\.01 \(frame 2\) does not increase .* 0\.02"),
}

#: the refused variants that OpenSim 4.6's TRCFileAdapter reads (it reads a bad number or an empty
#: time as NaN, stops at the first empty line, dropping the rows after it, and keeps an unknown unit,
#: which ``Units::convertTo`` later turns into a NaN scale factor); the rest it refuses too
OPENSIM_READS_REFUSED = {"not_a_number", "rows_after_empty_line", "empty_time", "unknown_units"}

_V1 = "trial\nversion=1\nnRows=2\nnColumns=3\ninDegrees=no\nendheader\n"
_V3 = "inDegrees=no\nDataType=double\nversion=3\nOpenSimVersion=4.6\nendheader\n"
_ROWS = "0\t1.5\t-2\n0.1\t3\t4.25\n"
STORAGE_DATA = [[1.5, -2], [3, 4.25]]

#: name -> (file text, data (2, 2) for columns a, b at times 0, 0.1): OpenSim's Storage reader
#: (version=1 with nRows/nColumns: labels split at any whitespace) and STOFileAdapter (version=3:
#: tab-separated, empty labels dropped, an empty field is NaN)
STORAGE = {
    "v1_double_tab_labels.mot": (_V1 + "time\t\ta\t\tb\t\n" + _ROWS, STORAGE_DATA),
    "v1_space_separated.mot": (_V1 + "time   a  b\n0 1.5 -2\n0.1   3\t4.25\n", STORAGE_DATA),
    "v1_crlf.mot": ((_V1 + "time\ta\tb\n" + _ROWS).replace("\n", "\r\n"), STORAGE_DATA),
    "v3_double_tab_labels.sto": (_V3 + "time\t\ta\t\tb\t\n" + _ROWS, STORAGE_DATA),
    "v3_trailing_tabs.sto": (_V3 + "time\ta\tb\t\n" + _ROWS.replace("\n", "\t\n"), STORAGE_DATA),
    "v3_spaces_in_fields.sto": (_V3 + "time\ta\tb\n 0 \t 1.5\t-2 \n0.1\t3\t4.25\n", STORAGE_DATA),
    "v3_blank_lines_before_labels.sto": (_V3 + "\n\ntime\ta\tb\n" + _ROWS, STORAGE_DATA),
    "v3_spaces_in_header.sto": (_V3.replace("inDegrees=no", "inDegrees = no").replace("endheader", "  endheader ")
                                + "time\ta\tb\n" + _ROWS, STORAGE_DATA),
    "v3_empty_field.sto": (_V3 + "time\ta\tb\n0\t\t-2\n0.1\t3\t4.25\n", [[NAN, -2], [3, 4.25]]),
}

#: an OpenSim 2.x ExternalLoads of PrescribedForce objects (as Gait2392's foot_floor_loads.xml)
LEGACY_LOADS = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="20302">
  <ExternalLoads name="">
    <objects>
      <PrescribedForce name="right">
        <body>calcn_r</body>
        <FunctionSet name="forceFunctions"><objects>
          <NaturalCubicSpline name="#1"><x>0 1</x><y>1 2</y></NaturalCubicSpline>
        </objects></FunctionSet>
      </PrescribedForce>
      <PrescribedForce name="left">
        <body>calcn_l</body>
      </PrescribedForce>
    </objects>
  </ExternalLoads>
</OpenSimDocument>
"""
