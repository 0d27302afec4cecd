; hark's Windows installer, for NSIS 3 (Debian's `makensis`); built by
; `scripts/package --windows`, which passes the defines:
;
;   makensis -DVERSION=0.1.0 -DHARK=path/to/hark.exe [-DASK=path/to/hark-ask.exe]
;            [-DAPP=path/to/hark-app.exe]
;            [-DWINDOW=path/to/hark-window.exe]
;            -DOUTFILE=path/to/hark-0.1.0-x64-setup.exe scripts/windows/hark.nsi
;
; It installs for the user who runs it, with no elevation, into
; %LOCALAPPDATA%\Programs\hark, as per-user tools do (VS Code's user setup,
; Tauri's NSIS default): hark's pipe, store, config and the Run key that
; starts the app at login are all this user's, so nothing of it belongs in
; Program Files or needs an administrator. It installs:
; - hark.exe, the CLI, with -DASK hark-ask.exe beside it (the agent's MCP
;   server in a program of its own, which `hark run` and `hark mcp-config`
;   point agents at when it is there), and with -DAPP hark-app.exe, the desktop app, side
;   by side as `hark app` expects (with -DWINDOW hark-window.exe, the
;   window process the app starts, beside them);
; - with the app, a Start-menu shortcut (hark.lnk) to it carrying the app's
;   AppUserModelID, which is what lets the app's toasts go under an id of
;   their own (Windows shows a desktop app's toast only if a Start-menu
;   shortcut carries its id). Without the app there is no shortcut: the
;   CLI has no window to start and sends no toasts;
; - the install directory on the user's PATH (HKCU\Environment), so
;   `hark mcp-config` and the rest work in a new terminal;
; - an uninstaller, registered under
;   HKCU\Software\Microsoft\Windows\CurrentVersion\Uninstall\hark (Settings →
;   Apps), which removes all of the above and the Run key's "hark" value if
;   it starts this install. hark's data (the store, the config) is kept.
;
; Only stock NSIS parts are used (LogicLib, StrFunc, WordFunc, MUI2, and the
; System plugin through Win\COM.nsh and Win\Propkey.nsh): the id is written
; into the shortcut's property store through IShellLink's IPropertyStore.
; Silent: `hark-…-setup.exe /S` (optionally `/D=DIR`, last), and the
; uninstaller `uninstall.exe /S`.

Unicode true
Target amd64-unicode
ManifestDPIAware true

!ifndef VERSION
  !error "VERSION is not defined (-DVERSION=x.y.z; scripts/package --windows passes it)"
!endif
!ifndef HARK
  !error "HARK is not defined (-DHARK=path/to/hark.exe)"
!endif
!ifndef OUTFILE
  !define OUTFILE "hark-${VERSION}-x64-setup.exe"
!endif

; The app's AppUserModelID: its Tauri identifier, which Tauri's own
; bundler gives the shortcut too (hark_core::platform::APP_ID).
!define AUMID "dev.hark.app"
!define UNINSTALL_KEY "Software\Microsoft\Windows\CurrentVersion\Uninstall\hark"
!define RUN_KEY "Software\Microsoft\Windows\CurrentVersion\Run"
!define SHORTCUT "$SMPROGRAMS\hark.lnk"

!include LogicLib.nsh
!include StrFunc.nsh
!include WordFunc.nsh
!include WinMessages.nsh
!include MUI2.nsh
!include Win\COM.nsh
!include Win\Propkey.nsh

${StrStr}
${UnStrStr}

Name "hark"
OutFile "${OUTFILE}"
InstallDir "$LOCALAPPDATA\Programs\hark"
RequestExecutionLevel user
; -DLIGHT: quick to build, not compressed (scripts/package --bin-dir, the
; tests: zlib takes 19 s over a debug hark.exe here, lzma longer).
!ifdef LIGHT
  SetCompress off
!else
  SetCompressor /SOLID lzma
!endif
ShowInstDetails show
ShowUninstDetails show
BrandingText "hark ${VERSION}"

; (makensis works in this script's directory.)
!define MUI_ICON "../../icons/icon.ico"
!define MUI_UNICON "../../icons/icon.ico"
!insertmacro MUI_PAGE_DIRECTORY
!insertmacro MUI_PAGE_INSTFILES
!insertmacro MUI_UNPAGE_CONFIRM
!insertmacro MUI_UNPAGE_INSTFILES
!insertmacro MUI_LANGUAGE "English"

VIProductVersion "${VERSION}.0"
VIAddVersionKey /LANG=${LANG_ENGLISH} "ProductName" "hark"
VIAddVersionKey /LANG=${LANG_ENGLISH} "ProductVersion" "${VERSION}"
VIAddVersionKey /LANG=${LANG_ENGLISH} "FileVersion" "${VERSION}"
VIAddVersionKey /LANG=${LANG_ENGLISH} "FileDescription" "hark installer"
VIAddVersionKey /LANG=${LANG_ENGLISH} "LegalCopyright" "hark's authors"

Section "hark"
  SetShellVarContext current
  SetOutPath "$INSTDIR"
  File "/oname=hark.exe" "${HARK}"
!ifdef ASK
  File "/oname=hark-ask.exe" "${ASK}"
!endif
!ifdef APP
  File "/oname=hark-app.exe" "${APP}"
!endif
!ifdef WINDOW
  File "/oname=hark-window.exe" "${WINDOW}"
!endif
  WriteUninstaller "$INSTDIR\uninstall.exe"

!ifdef APP
  CreateShortcut "${SHORTCUT}" "$INSTDIR\hark-app.exe" "" "$INSTDIR\hark-app.exe" 0
  Push "${SHORTCUT}"
  Call SetAppUserModelId
  Pop $0
  ${If} $0 != 0
    ; A shortcut without the id gives the app's toasts nothing: the app
    ; falls back to PowerShell's id, and the install says it failed.
    DetailPrint "cannot give the shortcut the AppUserModelID ${AUMID} (step $0)"
    SetErrorLevel 3
  ${EndIf}
!endif

  WriteRegStr HKCU "${UNINSTALL_KEY}" "DisplayName" "hark"
  WriteRegStr HKCU "${UNINSTALL_KEY}" "DisplayVersion" "${VERSION}"
  WriteRegStr HKCU "${UNINSTALL_KEY}" "Publisher" "hark"
  WriteRegStr HKCU "${UNINSTALL_KEY}" "DisplayIcon" "$INSTDIR\hark.exe,0"
  WriteRegStr HKCU "${UNINSTALL_KEY}" "InstallLocation" "$INSTDIR"
  WriteRegStr HKCU "${UNINSTALL_KEY}" "UninstallString" '"$INSTDIR\uninstall.exe"'
  WriteRegStr HKCU "${UNINSTALL_KEY}" "QuietUninstallString" '"$INSTDIR\uninstall.exe" /S'
  WriteRegDWORD HKCU "${UNINSTALL_KEY}" "NoModify" 1
  WriteRegDWORD HKCU "${UNINSTALL_KEY}" "NoRepair" 1

  Call AddToPath
SectionEnd

!ifdef APP
; Gives the shortcut whose path is on the stack the property
; System.AppUserModel.ID ({9F4C2855-9F79-4B39-A8D0-E1D42DE1D5F3}, 5) =
; ${AUMID}: the link loaded through IShellLink's IPersistFile, the value
; (a VT_LPWSTR PROPVARIANT) set in its IPropertyStore, committed, and the
; link saved. Leaves 0 on the stack, or the number of the step that failed.
Function SetAppUserModelId
  Exch $R0
  Push $0
  Push $1
  Push $2
  Push $3
  Push $4
  Push $5
  StrCpy $R1 1
  StrCpy $1 0
  StrCpy $2 0
  !insertmacro ComHlpr_CreateInProcInstance ${CLSID_ShellLink} ${IID_IShellLink} r0 ""
  ${If} $0 P<> 0
    StrCpy $R1 2
    ${IUnknown::QueryInterface} $0 '("${IID_IPersistFile}",.r1)'
  ${EndIf}
  ${If} $1 P<> 0
    StrCpy $R1 3
    ${IPersistFile::Load} $1 '("$R0",${STGM_READWRITE}).r5'
    ${If} $5 = 0
      StrCpy $R1 4
      ${IUnknown::QueryInterface} $0 '("${IID_IPropertyStore}",.r2)'
    ${EndIf}
  ${EndIf}
  ${If} $2 P<> 0
    StrCpy $R1 5
    System::Call '*${SYSSTRUCT_PROPERTYKEY}(${PKEY_AppUserModel_ID})p.r3'
    ; PROPVARIANT: vt, three reserved words, then the string's pointer.
    System::Call '*(&i2 ${VT_LPWSTR}, &i6 0, w "${AUMID}", &i8 0)p.r4'
    ${IPropertyStore::SetValue} $2 '($3,$4).r5'
    ${If} $5 = 0
      StrCpy $R1 6
      ${IPropertyStore::Commit} $2 '().r5'
    ${EndIf}
    ${If} $5 = 0
      StrCpy $R1 7
      ${IPersistFile::Save} $1 '("$R0",1).r5'
    ${EndIf}
    ${If} $5 = 0
      StrCpy $R1 0
    ${EndIf}
    System::Free $3
    System::Free $4
  ${EndIf}
  !insertmacro ComHlpr_SafeRelease $2
  !insertmacro ComHlpr_SafeRelease $1
  !insertmacro ComHlpr_SafeRelease $0
  Pop $5
  Pop $4
  Pop $3
  Pop $2
  Pop $1
  Pop $0
  StrCpy $R0 $R1
  Exch $R0
FunctionEnd
!endif

; The user's PATH (HKCU\Environment's Path), read into $0: sets the error
; flag, and $0 empty, when it cannot be edited safely (there but longer
; than this NSIS's strings, or not a string), so it is left as it is.
!macro ReadUserPath un
Function ${un}ReadUserPath
  ClearErrors
  ReadRegStr $0 HKCU "Environment" "Path"
  ${IfNot} ${Errors}
    StrLen $1 $0
    ; Room for this directory and a separator, within NSIS_MAX_STRLEN.
    StrLen $2 "$INSTDIR"
    IntOp $1 $1 + $2
    ${If} $1 >= ${NSIS_MAX_STRLEN}
      StrCpy $0 ""
      SetErrors
    ${EndIf}
    Return
  ${EndIf}
  ; Absent, or unreadable: only absent is fine.
  StrCpy $1 0
  ${Do}
    EnumRegValue $2 HKCU "Environment" $1
    ${If} $2 == ""
      ClearErrors
      StrCpy $0 ""
      Return
    ${EndIf}
    ${If} $2 == "Path"
      StrCpy $0 ""
      SetErrors
      Return
    ${EndIf}
    IntOp $1 $1 + 1
  ${Loop}
FunctionEnd
!macroend
!insertmacro ReadUserPath ""
!insertmacro ReadUserPath "un."

; Puts $INSTDIR on the user's PATH, once.
Function AddToPath
  Call ReadUserPath
  ${If} ${Errors}
    DetailPrint "the user's PATH is too long or not a string: not changed; add $INSTDIR to it by hand"
    Return
  ${EndIf}
  ${StrStr} $1 ";$0;" ";$INSTDIR;"
  ${If} $1 != ""
    Return
  ${EndIf}
  ${If} $0 == ""
    StrCpy $0 "$INSTDIR"
  ${Else}
    StrCpy $0 "$0;$INSTDIR"
  ${EndIf}
  WriteRegExpandStr HKCU "Environment" "Path" "$0"
  SendMessage ${HWND_BROADCAST} ${WM_SETTINGCHANGE} 0 "STR:Environment" /TIMEOUT=500
FunctionEnd

; Takes $INSTDIR off the user's PATH (every occurrence); removes the
; value if nothing else was on it.
Function un.RemoveFromPath
  Call un.ReadUserPath
  ${If} ${Errors}
    DetailPrint "the user's PATH is too long or not a string: not changed; take $INSTDIR off it by hand"
    Return
  ${EndIf}
  ${UnStrStr} $1 ";$0;" ";$INSTDIR;"
  ${If} $1 == ""
    Return
  ${EndIf}
  ${un.WordReplace} ";$0;" ";$INSTDIR;" ";" "+" $0
  ; Off come the two separators added above.
  StrCpy $0 $0 "" 1
  StrCpy $0 $0 -1
  ${If} $0 == ""
    DeleteRegValue HKCU "Environment" "Path"
  ${Else}
    WriteRegExpandStr HKCU "Environment" "Path" "$0"
  ${EndIf}
  SendMessage ${HWND_BROADCAST} ${WM_SETTINGCHANGE} 0 "STR:Environment" /TIMEOUT=500
FunctionEnd

Section "Uninstall"
  SetShellVarContext current
  ; The programs first: one still running (the app, `hark serve`) cannot
  ; be deleted, and then nothing else is taken away.
  ClearErrors
  Delete "$INSTDIR\hark-app.exe"
  Delete "$INSTDIR\hark-window.exe"
  Delete "$INSTDIR\hark-ask.exe"
  Delete "$INSTDIR\hark.exe"
  ${If} ${Errors}
    MessageBox MB_OK|MB_ICONSTOP "hark is running: quit the app (and any hark serve) and uninstall again." /SD IDOK
    SetErrorLevel 2
    Abort
  ${EndIf}
  Delete "${SHORTCUT}"
  ; The Run key's value, if it starts this install (`hark app --autostart on`).
  ReadRegStr $0 HKCU "${RUN_KEY}" "hark"
  ${UnStrStr} $1 "$0" "$INSTDIR\hark.exe"
  ${If} $1 != ""
    DeleteRegValue HKCU "${RUN_KEY}" "hark"
  ${EndIf}
  Call un.RemoveFromPath
  DeleteRegKey HKCU "${UNINSTALL_KEY}"
  Delete "$INSTDIR\uninstall.exe"
  RMDir "$INSTDIR"
SectionEnd
